//! The schema language: every field constructor with and without its default, the options,
//! the `component { ... }` keys, and the errors for every malformed shape.

use std::fmt::Write as _;
use std::sync::Arc;

use strata_arena::{ClassRegistry, Transform, Vec3};
use strata_component_store::{
    FieldDef, FieldType, ListValue, RefPolicy, Store, StructField, Value,
};
use strata_schema_adoption::{Schema, SchemaError, SchemaVm};

fn evaluate(source: &str) -> Result<Schema, SchemaError> {
    SchemaVm::new().unwrap().evaluate("Probe", source)
}

/// The single field `f` of `return component { fields = { f = <expression> } }`.
fn field(expression: &str) -> FieldDef {
    let source = format!("return component {{ fields = {{ f = {expression} }} }}");
    let schema = evaluate(&source).unwrap_or_else(|e| panic!("{expression}: {e}"));
    assert_eq!(schema.fields.len(), 1, "{expression}");
    schema.fields.into_iter().next().unwrap()
}

/// The error of `return component { fields = { f = <expression> } }`.
fn field_error(expression: &str) -> SchemaError {
    let source = format!("return component {{ fields = {{ f = {expression} }} }}");
    match evaluate(&source) {
        Ok(schema) => panic!("{expression} was accepted: {schema:?}"),
        Err(e) => e,
    }
}

fn member(name: &str, ty: FieldType, default: Value) -> StructField {
    StructField {
        name: Arc::from(name),
        ty,
        default,
    }
}

fn enum_type(variants: &[&str]) -> FieldType {
    FieldType::Enum(variants.iter().map(|v| Arc::from(*v)).collect())
}

#[test]
fn every_constructor_without_arguments_takes_its_zero() {
    assert_eq!(field("number()"), FieldDef::number("f", 0.0));
    assert_eq!(field("integer()"), FieldDef::integer("f", 0));
    assert_eq!(field("boolean()"), FieldDef::boolean("f", false));
    assert_eq!(field("text()"), FieldDef::text("f", ""));
    assert_eq!(
        field(r#"enum({ "Calm", "Angry" })"#),
        FieldDef::enumeration("f", &["Calm", "Angry"], "Calm")
    );
    assert_eq!(field("vector()"), FieldDef::vector("f", Vec3::ZERO));
    assert_eq!(
        field("transform()"),
        FieldDef::transform("f", Transform::IDENTITY)
    );
    assert_eq!(field("ref()"), FieldDef::reference("f", RefPolicy::Clear));
    assert_eq!(
        field("list(number())"),
        FieldDef::list("f", FieldType::Number)
    );
    assert_eq!(
        field("map(text(), number())"),
        FieldDef::map("f", FieldType::Text, FieldType::Number)
    );
    assert_eq!(field("struct({})"), FieldDef::structure("f", Vec::new()));
    assert_eq!(
        field("optional(number())"),
        FieldDef::optional("f", FieldType::Number)
    );
    assert_eq!(field("buffer()"), FieldDef::buffer("f"));

    // Every zero is what the type itself says it is.
    for expression in [
        "number()",
        "integer()",
        "boolean()",
        "text()",
        r#"enum({ "A" })"#,
        "vector()",
        "transform()",
        "ref()",
        "list(text())",
        "map(integer(), boolean())",
        "struct({ a = number() })",
        "optional(text())",
        "buffer()",
    ] {
        let f = field(expression);
        assert_eq!(f.default, f.ty.zero(), "{expression}");
        assert!(f.former_names.is_empty(), "{expression}");
        assert_eq!(f.on_destroy, RefPolicy::Clear, "{expression}");
    }
}

#[test]
fn explicit_defaults_are_kept() {
    assert_eq!(field("number(2.5)"), FieldDef::number("f", 2.5));
    assert_eq!(field("number(100)"), FieldDef::number("f", 100.0));
    assert_eq!(field("number(-1e300)"), FieldDef::number("f", -1e300));
    assert_eq!(field("integer(-7)"), FieldDef::integer("f", -7));
    assert_eq!(field("integer(3.0)"), FieldDef::integer("f", 3));
    assert_eq!(
        field("integer(2^53 - 1)"),
        FieldDef::integer("f", (1 << 53) - 1)
    );
    assert_eq!(field("boolean(true)"), FieldDef::boolean("f", true));
    assert_eq!(field("boolean(false)"), FieldDef::boolean("f", false));
    assert_eq!(field(r#"text("hello")"#), FieldDef::text("f", "hello"));
    assert_eq!(
        field(r#"text("h\u{e9}llo")"#),
        FieldDef::text("f", "h\u{e9}llo")
    );
    assert_eq!(
        field(r#"enum({ "Calm", "Angry", "Asleep" }, "Angry")"#),
        FieldDef::enumeration("f", &["Calm", "Angry", "Asleep"], "Angry")
    );
    assert_eq!(
        field(r#"enum({ "Calm", "Angry" }, "Angry")"#).default,
        Value::Enum(1)
    );
    assert_eq!(
        field("vector(1, 2.5, -3)"),
        FieldDef::vector("f", Vec3::new(1.0, 2.5, -3.0))
    );
    // Missing components are zero.
    assert_eq!(
        field("vector(4)"),
        FieldDef::vector("f", Vec3::new(4.0, 0.0, 0.0))
    );
    assert_eq!(
        field("vector(nil, 5)"),
        FieldDef::vector("f", Vec3::new(0.0, 5.0, 0.0))
    );
    // Defaults computed with the pure functions the environment offers.
    assert_eq!(
        field("number(math.floor(math.sqrt(2) * 100) / 100)"),
        FieldDef::number("f", 1.41)
    );
    assert_eq!(
        field(r#"text(string.upper("ab") .. string.rep("-", 3))"#),
        FieldDef::text("f", "AB---")
    );
    assert_eq!(
        field(r#"text(table.concat({ "a", "b" }, ","))"#),
        FieldDef::text("f", "a,b")
    );
}

#[test]
fn containers_describe_their_elements_and_start_empty() {
    assert_eq!(
        field(r#"list(enum({ "A", "B" }, "B"))"#),
        FieldDef::list("f", enum_type(&["A", "B"]))
    );
    assert_eq!(
        field("list(list(vector()))"),
        FieldDef::list("f", FieldType::List(Box::new(FieldType::Vector)))
    );
    for (key, ty) in [
        ("text()", FieldType::Text),
        ("integer()", FieldType::Integer),
        ("boolean()", FieldType::Boolean),
        (r#"enum({ "X", "Y" })"#, enum_type(&["X", "Y"])),
    ] {
        assert_eq!(
            field(&format!("map({key}, ref())")),
            FieldDef::map("f", ty, FieldType::Reference),
            "{key}"
        );
    }
    // An element's or inner field's own default does not make the container non-empty.
    assert_eq!(
        field("list(number(5))").default,
        Value::List(ListValue::EMPTY)
    );
    assert_eq!(field("optional(number(5))").default, Value::Optional(None));
    assert_eq!(
        field("optional(struct({ a = integer(1) }))"),
        FieldDef::optional(
            "f",
            FieldType::Struct(vec![member("a", FieldType::Integer, Value::Integer(1))].into())
        )
    );
}

#[test]
fn struct_members_are_ordered_by_name_and_default_to_their_own_defaults() {
    let f = field(
        r#"struct({ zeta = number(1), alpha = text("a"), Mid = boolean(true), inner = struct({ y = integer(2), x = integer(1) }) })"#,
    );
    let inner = FieldType::Struct(
        vec![
            member("x", FieldType::Integer, Value::Integer(1)),
            member("y", FieldType::Integer, Value::Integer(2)),
        ]
        .into(),
    );
    let inner_default = inner.zero();
    assert_eq!(
        inner_default,
        Value::Struct(vec![Value::Integer(1), Value::Integer(2)].into())
    );
    let expected = FieldDef::structure(
        "f",
        vec![
            member("Mid", FieldType::Boolean, Value::Boolean(true)),
            member("alpha", FieldType::Text, Value::Text(Arc::from("a"))),
            member("inner", inner, inner_default.clone()),
            member("zeta", FieldType::Number, Value::Number(1.0)),
        ],
    );
    assert_eq!(f, expected);
    assert_eq!(
        f.default,
        Value::Struct(
            vec![
                Value::Boolean(true),
                Value::Text(Arc::from("a")),
                inner_default,
                Value::Number(1.0),
            ]
            .into()
        )
    );
}

#[test]
fn former_names_and_destruction_policies() {
    assert_eq!(
        field(r#"number(100, { formerNames = { "maximum", "maxHealth" } })"#),
        FieldDef::number("f", 100.0).former_names(&["maximum", "maxHealth"])
    );
    assert_eq!(
        field(r#"enum({ "A" }, "A", { formerNames = { "kind" } })"#),
        FieldDef::enumeration("f", &["A"], "A").former_names(&["kind"])
    );
    assert_eq!(
        field(r#"vector(1, 2, 3, { formerNames = { "pos" } })"#),
        FieldDef::vector("f", Vec3::new(1.0, 2.0, 3.0)).former_names(&["pos"])
    );
    assert_eq!(
        field(r#"buffer({ formerNames = { "blob" } })"#),
        FieldDef::buffer("f").former_names(&["blob"])
    );
    assert_eq!(field("number(1, {})"), FieldDef::number("f", 1.0));

    for (written, policy) in [
        ("clear", RefPolicy::Clear),
        ("removeComponent", RefPolicy::RemoveComponent),
        ("destroyHolder", RefPolicy::DestroyHolder),
    ] {
        assert_eq!(
            field(&format!(r#"ref({{ onDestroy = "{written}" }})"#)),
            FieldDef::reference("f", policy),
            "{written}"
        );
        assert_eq!(
            field(&format!(r#"list(ref(), {{ onDestroy = "{written}" }})"#)),
            FieldDef::reference_list("f", policy),
            "{written}"
        );
    }
    assert_eq!(
        field(r#"ref({ onDestroy = "removeComponent", formerNames = { "target" } })"#),
        FieldDef::reference("f", RefPolicy::RemoveComponent).former_names(&["target"])
    );

    // Refused on fields that cannot hold a reference.
    for expression in [
        r#"number(0, { onDestroy = "clear" })"#,
        r#"text("", { onDestroy = "destroyHolder" })"#,
        r#"list(number(), { onDestroy = "removeComponent" })"#,
        r#"buffer({ onDestroy = "clear" })"#,
    ] {
        let SchemaError::Invalid { message, .. } = field_error(expression) else {
            panic!("{expression}: not Invalid");
        };
        assert_eq!(
            message, "field `f`: onDestroy needs a ref field or a list of refs",
            "{expression}"
        );
    }
}

#[test]
fn component_keys_make_the_schema() {
    let schema = evaluate(
        r#"
        return component {
            version = 3,
            classes = { "Model", "Part" },
            requires = { "Team", "Named" },
            observed = true,
            fields = {
                zeta = number(1),
                alpha = integer(2),
                Beta = boolean(true),
                target = ref({ onDestroy = "destroyHolder" }),
            },
        }
        "#,
    )
    .unwrap();
    let expected = Schema {
        version: 3,
        fields: vec![
            FieldDef::boolean("Beta", true),
            FieldDef::integer("alpha", 2),
            FieldDef::reference("target", RefPolicy::DestroyHolder),
            FieldDef::number("zeta", 1.0),
        ],
        classes: Some(vec![Arc::from("Model"), Arc::from("Part")]),
        requires: vec![Arc::from("Team"), Arc::from("Named")],
        observed: true,
    };
    assert_eq!(schema, expected);

    // Everything but `fields` is optional.
    let minimal = evaluate("return component { fields = {} }").unwrap();
    assert_eq!(
        minimal,
        Schema {
            version: 1,
            fields: Vec::new(),
            classes: None,
            requires: Vec::new(),
            observed: false,
        }
    );
    let explicit = evaluate(
        "return component { version = 1, classes = {}, requires = {}, observed = false, fields = {} }",
    )
    .unwrap();
    assert_eq!(explicit.classes, Some(Vec::new()));
    assert!(!explicit.observed);

    // The component takes its name from whoever installs it, and the store accepts it.
    let def = schema.to_component_def("Health");
    assert_eq!(&*def.name, "Health");
    assert_eq!(def.version, 3);
    let mut store = Store::new();
    let classes = ClassRegistry::standard();
    let team = evaluate("return component { fields = { id = integer() } }").unwrap();
    let named = evaluate("return component { fields = { label = text() } }").unwrap();
    store
        .install(team.to_component_def("Team"), &classes)
        .unwrap();
    store
        .install(named.to_component_def("Named"), &classes)
        .unwrap();
    let health = store.install(def, &classes).unwrap();
    let installed = store.def(health).unwrap();
    let names: Vec<&str> = installed.fields().iter().map(|f| &*f.name).collect();
    assert_eq!(names, ["Beta", "alpha", "target", "zeta"]);
}

#[test]
fn field_order_does_not_depend_on_how_the_table_was_built() {
    let forwards = evaluate(
        r#"
        local fields = {}
        for i = 1, 40 do fields["f" .. i] = integer(i) end
        return component { fields = fields }
        "#,
    )
    .unwrap();
    let backwards = evaluate(
        r#"
        local fields = {}
        for i = 40, 1, -1 do fields["f" .. i] = integer(i) end
        return component { fields = fields }
        "#,
    )
    .unwrap();
    assert_eq!(forwards, backwards);
    let names: Vec<&str> = forwards.fields.iter().map(|f| &*f.name).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
    assert_eq!(names[..3], ["f1", "f10", "f11"]);
}

/// A readable rendering of a value of type `ty`.
fn show(value: &Value, ty: &FieldType) -> String {
    match (value, ty) {
        (Value::Number(n), _) => format!("{n}"),
        (Value::Integer(i), _) => format!("{i}"),
        (Value::Boolean(b), _) => format!("{b}"),
        (Value::Text(t), _) => format!("{t:?}"),
        (Value::Enum(i), FieldType::Enum(variants)) => variants[*i as usize].to_string(),
        (Value::Vector(v), _) => format!("({}, {}, {})", v.x, v.y, v.z),
        (Value::Transform(t), _) if **t == Transform::IDENTITY => "identity".into(),
        (Value::Reference(None), _) | (Value::Optional(None), _) => "none".into(),
        (Value::List(l), _) if *l == ListValue::EMPTY => "[]".into(),
        (Value::Map(m), _) if m.is_empty() => "{}".into(),
        (Value::Struct(values), FieldType::Struct(members)) => format!(
            "{{ {} }}",
            members
                .iter()
                .zip(values.iter())
                .map(|(m, v)| format!("{} = {}", m.name, show(v, &m.ty)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        (Value::Buffer(b), _) => format!("<{} bytes>", b.len()),
        (other, _) => format!("{other:?}"),
    }
}

fn render(schema: &Schema) -> String {
    let mut out = format!("version {}", schema.version);
    if schema.observed {
        out.push_str(", observed");
    }
    if let Some(classes) = &schema.classes {
        write!(out, ", classes {}", classes.join(" ")).unwrap();
    }
    if !schema.requires.is_empty() {
        write!(out, ", requires {}", schema.requires.join(" ")).unwrap();
    }
    for f in &schema.fields {
        write!(
            out,
            "\n{}: {} = {}",
            f.name,
            f.ty.name(),
            show(&f.default, &f.ty)
        )
        .unwrap();
        if !f.former_names.is_empty() {
            write!(out, " (was {})", f.former_names.join(", ")).unwrap();
        }
        if f.on_destroy != RefPolicy::Clear || f.ty.can_reference() {
            write!(out, " [onDestroy {:?}]", f.on_destroy).unwrap();
        }
    }
    out
}

#[test]
fn a_representative_schema_renders_readably() {
    let schema = evaluate(
        r#"
        return component {
          version = 2,
          classes = { "Model", "Part" },
          requires = { "Team" },
          observed = true,
          fields = {
            current = number(100),
            max     = number(100, { formerNames = { "maximum" } }),
            regen   = integer(0),
            alive   = boolean(true),
            label   = text("hero"),
            mood    = enum({ "Calm", "Angry" }, "Angry"),
            home    = vector(1, 2, 3),
            pose    = transform(),
            target  = ref({ onDestroy = "removeComponent" }),
            allies  = list(ref(), { onDestroy = "clear" }),
            path    = list(vector()),
            tagsOf  = map(text(), integer(0)),
            stats   = struct({ speed = number(16), jump = number(50), name = text("base") }),
            extra   = optional(number(0)),
            blob    = buffer(),
          },
        }
        "#,
    )
    .unwrap();
    insta::assert_snapshot!(render(&schema), @r#"
    version 2, observed, classes Model Part, requires Team
    alive: boolean = true
    allies: list(ref) = [] [onDestroy Clear]
    blob: buffer = <0 bytes>
    current: number = 100
    extra: optional(number) = none
    home: vector = (1, 2, 3)
    label: text = "hero"
    max: number = 100 (was maximum)
    mood: enum(Calm|Angry) = Angry
    path: list(vector) = []
    pose: transform = identity
    regen: integer = 0
    stats: struct{jump: number, name: text, speed: number} = { jump = 50, name = "base", speed = 16 }
    tagsOf: map(text, integer) = {}
    target: ref = none [onDestroy RemoveComponent]
    "#);
}

#[test]
fn malformed_shapes_are_invalid_with_a_useful_message() {
    let cases = [
        // Bad defaults.
        r#"return component { fields = { f = number("x") } }"#,
        "return component { fields = { f = number(true) } }",
        "return component { fields = { f = integer(1.5) } }",
        "return component { fields = { f = integer(2^53) } }",
        "return component { fields = { f = boolean(1) } }",
        "return component { fields = { f = text(5) } }",
        r#"return component { fields = { f = vector(1, "y") } }"#,
        // Enums.
        r#"return component { fields = { f = enum({ "A", "B" }, "C") } }"#,
        r#"return component { fields = { f = enum({ "A" }, 1) } }"#,
        "return component { fields = { f = enum({}) } }",
        r#"return component { fields = { f = enum("A") } }"#,
        // Containers.
        "return component { fields = { f = map(number(), text()) } }",
        "return component { fields = { f = map(list(text()), text()) } }",
        "return component { fields = { f = map(vector(), text()) } }",
        "return component { fields = { f = map(text()) } }",
        "return component { fields = { f = list() } }",
        r#"return component { fields = { f = list({ kind = "number" }) } }"#,
        "return component { fields = { f = optional() } }",
        "return component { fields = { f = struct(5) } }",
        "return component { fields = { f = struct({ a = 5 }) } }",
        "return component { fields = { f = struct({ [1] = number() }) } }",
        // Options.
        "return component { fields = { f = number(1, { bogus = true }) } }",
        "return component { fields = { f = number(1, 5) } }",
        r#"return component { fields = { f = ref({ onDestroy = "explode" }) } }"#,
        r#"return component { fields = { f = number(0, { onDestroy = "clear" }) } }"#,
        r#"return component { fields = { f = number(0, { formerNames = "old" }) } }"#,
        r#"return component { fields = { f = list(ref({ onDestroy = "destroyHolder" })) } }"#,
        "return component { fields = { f = struct({ a = number(0, { bogus = 1 }) }) } }",
        // Fields not built by a constructor.
        r#"return component { fields = { f = { kind = "number", default = 1 } } }"#,
        "return component { fields = { f = 5 } }",
        "return component { fields = { number() } }",
        // The component table.
        r#"return component { name = "Health", fields = {} }"#,
        r#"return component { colour = "red", fields = {} }"#,
        "return component { }",
        "return component { fields = 5 }",
        "return component { version = 0, fields = {} }",
        "return component { version = 1.5, fields = {} }",
        r#"return component { observed = "yes", fields = {} }"#,
        r#"return component { classes = "Model", fields = {} }"#,
        "return component { requires = { 1 }, fields = {} }",
        "return component { [1] = 2, fields = {} }",
        "return component(5)",
    ];
    let vm = SchemaVm::new().unwrap();
    let mut listing = String::new();
    for source in cases {
        let error = vm.evaluate("Probe", source).expect_err(source);
        assert!(
            matches!(error, SchemaError::Invalid { .. }),
            "{source}: {error:?}"
        );
        writeln!(listing, "{error}").unwrap();
    }
    insta::assert_snapshot!(listing, @r#"
    invalid schema: field `f`: number default must be a number
    invalid schema: field `f`: number default must be a number
    invalid schema: field `f`: integer default must be a whole number
    invalid schema: field `f`: integer default must be a whole number
    invalid schema: field `f`: boolean default must be true or false
    invalid schema: field `f`: text default must be a string
    invalid schema: field `f`: vector components must be numbers
    invalid schema: field `f`: enum default `C` is not a variant
    invalid schema: field `f`: enum default must be a variant name
    invalid schema: field `f`: an enum needs at least one variant
    invalid schema: field `f`: enum variants must be a list of names
    invalid schema: field `f`: map keys must be text, integer, boolean or enum
    invalid schema: field `f`: map keys must be text, integer, boolean or enum
    invalid schema: field `f`: map keys must be text, integer, boolean or enum
    invalid schema: field `f`: map needs a value field, such as map(text(), number())
    invalid schema: field `f`: list needs an element field, such as list(number())
    invalid schema: field `f`: list needs an element field, such as list(number())
    invalid schema: field `f`: optional needs an inner field, such as optional(number())
    invalid schema: field `f`: struct needs a table of member fields
    invalid schema: field `f.a` must be built with a constructor such as number(0)
    invalid schema: field `f`: struct member names must be strings
    invalid schema: field `f`: unknown option `bogus`
    invalid schema: field `f`: options must be a table such as { formerNames = { "old" } }
    invalid schema: field `f`: onDestroy must be "clear", "removeComponent" or "destroyHolder"
    invalid schema: field `f`: onDestroy needs a ref field or a list of refs
    invalid schema: field `f`: formerNames must be a list of names
    invalid schema: field `f`: options go on the outer field, as in list(ref(), { onDestroy = "clear" })
    invalid schema: field `f.a`: options go on the outer field, as in list(ref(), { onDestroy = "clear" })
    invalid schema: field `f` must be built with a constructor such as number(0)
    invalid schema: field `f` must be built with a constructor such as number(0)
    invalid schema: field names must be strings
    invalid schema: a schema cannot name itself: the component takes its definition's name
    invalid schema: unknown component key `colour`
    invalid schema: component needs fields = { ... }
    invalid schema: component needs fields = { ... }
    invalid schema: version must be a positive integer
    invalid schema: version must be a positive integer
    invalid schema: observed must be true or false
    invalid schema: classes must be a list of names
    invalid schema: requires must be a list of names
    invalid schema: component keys must be names
    invalid schema on line 1: component expects a table: component { fields = { ... } }
    "#);
}

#[test]
fn errors_carry_the_line_luau_gives() {
    let vm = SchemaVm::new().unwrap();

    let syntax = vm
        .evaluate(
            "Probe",
            "return component {\n  fields = {\n    a = number(,\n  },\n}\n",
        )
        .unwrap_err();
    let SchemaError::Syntax { line, message } = &syntax else {
        panic!("{syntax:?}");
    };
    assert_eq!(*line, Some(3), "{syntax}");
    assert!(!message.is_empty());
    assert!(
        !message.contains("Probe:"),
        "location is kept apart: {message}"
    );

    let runtime = vm
        .evaluate("Probe", "local x = nil\nlocal y = 2\nx.y = 1\n")
        .unwrap_err();
    assert_eq!(
        runtime,
        SchemaError::Runtime {
            message: "attempt to index nil with 'y'".into(),
            line: Some(3),
        }
    );
    assert_eq!(
        runtime.to_string(),
        "runtime error on line 3: attempt to index nil with 'y'"
    );

    let raised = vm
        .evaluate("Probe", "\n\n\n\nerror(\"no schema today\")\n")
        .unwrap_err();
    assert_eq!(
        raised,
        SchemaError::Runtime {
            message: "no schema today".into(),
            line: Some(5),
        }
    );
    let asserted = vm
        .evaluate("Probe", "local n = 1\nassert(n == 2, \"n must be 2\")\n")
        .unwrap_err();
    assert_eq!(
        asserted,
        SchemaError::Runtime {
            message: "n must be 2".into(),
            line: Some(2),
        }
    );

    // A shape error raised inside a constructor call points at the call.
    let shape = vm
        .evaluate("Probe", "local spec = 5\n\nreturn component(spec)\n")
        .unwrap_err();
    assert!(
        matches!(shape, SchemaError::Invalid { line: Some(3), .. }),
        "{shape:?}"
    );
}
