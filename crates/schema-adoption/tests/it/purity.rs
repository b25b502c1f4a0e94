//! Evaluation is pure: the same source gives the same definition (or the same error) in any VM,
//! however often and after whatever else ran. Nothing random, no addresses, no state carried
//! from one evaluation into the next, and a fixed order when walking a table.

use strata_component_store::{FieldDef, Value};
use strata_schema_adoption::{Schema, SchemaError, SchemaVm};

/// The outcomes of a source: twice in one VM with another source in between, and once in a
/// second VM that is still alive (so it cannot reuse the first one's memory).
fn outcomes(
    first: &SchemaVm,
    second: &SchemaVm,
    source: &str,
    between: &str,
) -> Vec<Result<Schema, SchemaError>> {
    let a = first.evaluate("Pure", source);
    let _ = first.evaluate("Between", between);
    let b = first.evaluate("Pure", source);
    let c = second.evaluate("Pure", source);
    vec![a, b, c]
}

#[test]
fn the_same_source_always_gives_the_same_definition() {
    let first = SchemaVm::new().unwrap();
    let second = SchemaVm::new().unwrap();
    // Sources that could see randomness, addresses or an earlier evaluation's state.
    let sources = [
        "return component { fields = { f = number(math.random()) } }",
        "return component { fields = { f = number(math.random(1, 1000000)) } }",
        "return component { fields = { f = text(tostring({})) } }",
        "return component { fields = { f = text(tostring(number)) } }",
        "return component { fields = { f = text(tostring(number(1))) } }",
        r#"return component { fields = { f = text(string.format("%s", {})) } }"#,
        r#"return component { fields = { f = text(string.format("%*", number)) } }"#,
        "error({})",
        "error(number)",
        "assert(false, {})",
        "local t = {} t[{}] = 'a' t[{}] = 'b' t[{}] = 'c' local s = '' for _, v in pairs(t) do s = s .. v end return component { fields = { f = text(s) } }",
        "local t = {} t[number] = 'a' t[text] = 'b' t[list] = 'c' local s = '' for _, v in pairs(t) do s = s .. v end return component { fields = { f = text(s) } }",
        // Luau's generalised iteration walks a table itself, in an order that follows the
        // addresses of table and function keys.
        "local t = {} for i = 1, 64 do t[{}] = string.char(64 + i % 26) end local s = '' for _, v in t do s = s .. v end return component { fields = { f = text(s) } }",
        "local s = '' for k in number() do s = s .. type(k) end return component { fields = { f = text(s) } }",
        "local t = { [number] = 'a', [text] = 'b', [list] = 'c', [map] = 'd' } local s = '' for _, v in t do s = s .. v end return component { fields = { f = text(s) } }",
    ];
    let between = "math.randomseed(42) string.x = 1 leaked = 1 return component { fields = {} }";
    for source in sources {
        let outcomes = outcomes(&first, &second, source, between);
        assert_eq!(outcomes[0], outcomes[1], "{source}");
        assert_eq!(outcomes[0], outcomes[2], "{source}");
        let shown = format!("{:?}", outcomes[0]);
        assert!(
            !shown.contains("0x"),
            "{source}: an address leaked: {shown}"
        );
    }
}

#[test]
fn a_loop_may_not_walk_a_table_itself() {
    let vm = SchemaVm::new().unwrap();
    let sources = [
        "local t = { a = 1 }\nfor k, v in t do end",
        "local t = {}\nlocal function same(x) return x end\nfor k in same(t) do end",
        "local t = {}\nfor k in `{1}` do end",
    ];
    for source in sources {
        match vm.evaluate("Walk", source) {
            Err(SchemaError::Runtime { message, line }) => {
                assert!(message.contains("for loop iterates pairs(t)"), "{message}");
                assert_eq!(line, Some(source.lines().count() as u32), "{source}");
            }
            other => panic!("{source}: {other:?}"),
        }
    }
    match vm.evaluate("Reserved", "local __strata_iterate = pairs") {
        Err(SchemaError::Invalid { message, line }) => {
            assert!(message.contains("reserved"), "{message}");
            assert_eq!(line, Some(1));
        }
        other => panic!("{other:?}"),
    }
    // Iterating functions, `pairs` and `ipairs` among them, works as before.
    let schema = vm
        .evaluate(
            "Walks",
            r#"local names = {}
            for _, v in ipairs({ "b", "a" }) do table.insert(names, v) end
            for k in pairs({ z = 1, y = 2 }) do table.insert(names, k) end
            local function count(limit)
                local n = 0
                return function() n = n + 1 if n <= limit then return n end return nil end
            end
            for n in count(2) do table.insert(names, tostring(n)) end
            return component { fields = { f = text(table.concat(names, ",")) } }"#,
        )
        .unwrap();
    assert_eq!(schema.fields[0].default, Value::Text("b,a,y,z,1,2".into()));
}

#[test]
fn randomness_is_not_offered() {
    let vm = SchemaVm::new().unwrap();
    for source in ["math.random()", "math.randomseed(1)", "math.noise(1)"] {
        match vm.evaluate("Random", source) {
            Err(SchemaError::Runtime { message, .. }) => {
                assert!(message.contains("attempt to call a nil value"), "{message}")
            }
            other => panic!("{source}: {other:?}"),
        }
    }
}

#[test]
fn values_without_a_printable_form_print_as_their_type() {
    let vm = SchemaVm::new().unwrap();
    let schema = vm
        .evaluate(
            "Print",
            r#"return component { fields = {
                a = text(tostring({})),
                b = text(tostring(number)),
                c = text(tostring(1.5)),
                d = text(tostring(true)),
                e = text(tostring(nil)),
                f = text(tostring("x")),
            } }"#,
        )
        .unwrap();
    let defaults: Vec<Value> = schema.fields.into_iter().map(|f| f.default).collect();
    let text = |s: &str| Value::Text(s.into());
    assert_eq!(
        defaults,
        vec![
            text("table"),
            text("function"),
            text("1.5"),
            text("true"),
            text("nil"),
            text("x")
        ]
    );
}

#[test]
fn pairs_walks_a_table_in_a_fixed_order() {
    let vm = SchemaVm::new().unwrap();
    // Booleans, then numbers in ascending order, then strings by their bytes, whatever the
    // order of insertion.
    let walk = |build: &str| -> String {
        let source = format!(
            "local t = {{}} {build} local s = '' for k, v in pairs(t) do s = s .. tostring(k) .. '=' .. tostring(v) .. ' ' end return component {{ fields = {{ f = text(s) }} }}"
        );
        let schema = vm.evaluate("Walk", &source).unwrap();
        let [
            FieldDef {
                default: Value::Text(s),
                ..
            },
        ] = &schema.fields[..]
        else {
            panic!("{schema:?}");
        };
        s.to_string()
    };
    let forwards =
        walk("t.b = 1 t.a = 2 t[10] = 3 t[2] = 4 t[true] = 5 t[false] = 6 t.B = 7 t[-1.5] = 8");
    let backwards =
        walk("t[-1.5] = 8 t.B = 7 t[false] = 6 t[true] = 5 t[2] = 4 t[10] = 3 t.a = 2 t.b = 1");
    assert_eq!(forwards, "false=6 true=5 -1.5=8 2=4 10=3 B=7 a=2 b=1 ");
    assert_eq!(backwards, forwards);

    // Keys whose order would depend on addresses are refused.
    for build in ["t[{}] = 1", "t[number] = 1"] {
        let source = format!("local t = {{}} {build} for k in pairs(t) do end");
        match vm.evaluate("Walk", &source) {
            Err(SchemaError::Runtime { message, .. }) => {
                assert!(message.contains("pairs"), "{message}")
            }
            other => panic!("{build}: {other:?}"),
        }
    }
}
