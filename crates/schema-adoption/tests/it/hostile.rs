//! Hostile schema sources: endless loops, deep recursion, memory bombs on both sides of the
//! VM boundary, reaching for things the sandbox does not provide, tampering with shared state,
//! and wrong return shapes. Each one must end as a typed `SchemaError`, and the same VM, the
//! same evaluator and the store must keep working afterwards.

use std::time::{Duration, Instant};

use strata_arena::ClassRegistry;
use strata_component_store::{FieldDef, FieldType, Store};
use strata_schema_adoption::{Budget, Evaluator, Schema, SchemaError, SchemaVm};

/// A normal schema that also looks at the shared libraries and the globals, so that tampering
/// by an earlier evaluation would show.
const NORMAL: &str = r#"
return component {
    version = 2,
    fields = {
        hp = number(100),
        name = text(string.rep("ab", 2)),
        tags = list(text()),
        pi = number(math.pi),
        stringX = text(type(string.x)),
        leaked = text(type(leaked)),
    },
}
"#;

fn normal_schema() -> Schema {
    Schema {
        version: 2,
        fields: vec![
            FieldDef::number("hp", 100.0),
            FieldDef::text("leaked", "nil"),
            FieldDef::text("name", "abab"),
            FieldDef::number("pi", std::f64::consts::PI),
            FieldDef::text("stringX", "nil"),
            FieldDef::list("tags", FieldType::Text),
        ],
        classes: None,
        requires: Vec::new(),
        observed: false,
    }
}

/// One VM, one evaluator and one store shared by every hostile source of a test.
struct Harness {
    vm: SchemaVm,
    evaluator: Evaluator,
    store: Store,
    classes: ClassRegistry,
    checks: usize,
}

impl Harness {
    fn new() -> Self {
        Self::with_budget(Budget::STANDARD)
    }

    fn with_budget(budget: Budget) -> Self {
        Self {
            vm: SchemaVm::with_budget(budget).unwrap(),
            evaluator: Evaluator::with_budget(budget).unwrap(),
            store: Store::new(),
            classes: ClassRegistry::standard(),
            checks: 0,
        }
    }

    /// The error a source ends in, the same through the VM and the evaluator, after which both
    /// still evaluate the normal schema and the store still installs it.
    #[track_caller]
    fn refuse(&mut self, source: &str) -> SchemaError {
        let error = match self.vm.evaluate("Hostile", source) {
            Ok(schema) => panic!("accepted: {}\n{schema:?}", shorten(source)),
            Err(e) => e,
        };
        let through_cache = self.evaluator.evaluate("Hostile", source).unwrap_err();
        assert_eq!(error, through_cache, "{}", shorten(source));
        self.still_works();
        error
    }

    #[track_caller]
    fn still_works(&mut self) {
        self.checks += 1;
        let schema = self.vm.evaluate("Normal", NORMAL).unwrap();
        assert_eq!(schema, normal_schema());
        // A source the evaluator has not seen, so it really runs.
        let fresh = format!("{NORMAL}-- {}\n", self.checks);
        let before = self.evaluator.evaluations();
        let cached = self.evaluator.evaluate("Normal", &fresh).unwrap();
        assert_eq!(self.evaluator.evaluations(), before + 1);
        assert_eq!(*cached, normal_schema());
        let name = format!("Normal{}", self.checks);
        let id = self
            .store
            .install(schema.to_component_def(&name), &self.classes)
            .unwrap();
        assert_eq!(self.store.component(&name), Some(id));
    }
}

/// A source as it appears in a failure message: long ones are cut.
fn shorten(source: &str) -> String {
    match source.char_indices().nth(400) {
        Some((at, _)) => format!("{}... ({} bytes)", &source[..at], source.len()),
        None => source.to_owned(),
    }
}

#[track_caller]
fn assert_runtime(error: &SchemaError, expected: &str) {
    match error {
        SchemaError::Runtime { message, line } => {
            assert!(message.contains(expected), "{message:?} lacks {expected:?}");
            assert!(line.is_some(), "{error:?}");
        }
        other => panic!("not a runtime error: {other:?}"),
    }
}

#[test]
fn endless_loops_and_deep_recursion_are_stopped() {
    let mut h = Harness::new();
    let started = Instant::now();
    assert_eq!(
        h.refuse("while true do end"),
        SchemaError::InstructionBudget(1_000_000)
    );
    assert_eq!(
        h.refuse("repeat local x = 1 until false"),
        SchemaError::InstructionBudget(1_000_000)
    );
    assert_eq!(
        h.refuse("local function f() return f() end return f()"),
        SchemaError::StackOverflow,
        "Luau keeps a frame for a tail call"
    );
    assert_eq!(
        h.refuse("local function f(n) return f(n+1)+1 end f(1)"),
        SchemaError::StackOverflow
    );
    assert_eq!(
        h.refuse("local function f(n) local t = { n } return #f(n + 1) end f(1)"),
        SchemaError::StackOverflow
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn memory_bombs_hit_the_memory_budget() {
    let mut h = Harness::new();
    let budget = SchemaError::MemoryBudget(8 * 1024 * 1024);
    // One call asking for a gigabyte is refused by its cap before anything is allocated.
    assert!(matches!(
        h.refuse(r#"local s = string.rep("x", 2^30) return component { fields = {} }"#),
        SchemaError::SizeCap { .. }
    ));
    // Doubling a string within the cap until the budget runs out.
    assert_eq!(
        h.refuse(
            r#"local s = string.rep("x", 2^20) local t = {} for i = 1, 100 do t[i] = s .. i end"#
        ),
        budget
    );
    assert_eq!(
        h.refuse(r#"local s = "x" while true do s = s .. s end"#),
        budget
    );
    assert_eq!(
        h.refuse("local t = {} local i = 0 while true do i = i + 1 t[i] = i end"),
        budget
    );
    assert_eq!(
        h.refuse("local t = {} while true do t = { t, t, t, t } end"),
        budget
    );
    assert_eq!(
        h.refuse(
            "local fields = {} local i = 0 while true do i = i + 1 fields[\"f\" .. i] = number(i) end"
        ),
        budget
    );
}

#[test]
fn memory_bombs_built_from_shared_tables_are_charged_on_the_host() {
    let mut h = Harness::new();
    let budget = SchemaError::MemoryBudget(8 * 1024 * 1024);
    // One 1 MiB string, used as the default of 2,000 fields: 1 MiB in Luau, 2 GiB as text
    // defaults on the host.
    assert_eq!(
        h.refuse(
            r#"
            local s = string.rep("x", 2^20)
            local fields = {}
            for i = 1, 2000 do fields["f" .. i] = text(s) end
            return component { fields = fields }
            "#
        ),
        budget
    );
    // Twenty levels of a struct whose two members are the same table: 21 tables in Luau, a
    // million types on the host.
    assert_eq!(
        h.refuse(
            r#"
            local t = number()
            for i = 1, 20 do t = struct({ a = t, b = t }) end
            return component { fields = { f = t } }
            "#
        ),
        budget
    );
    // One long list of variants shared by many enums.
    assert_eq!(
        h.refuse(
            r#"
            local variants = {}
            for i = 1, 20000 do variants[i] = "v" .. i end
            local fields = {}
            for i = 1, 500 do fields["f" .. i] = enum(variants) end
            return component { fields = fields }
            "#
        ),
        budget
    );
    // The same string as a former name of many fields.
    assert_eq!(
        h.refuse(
            r#"
            local old = { string.rep("o", 2^20) }
            local fields = {}
            for i = 1, 100 do fields["f" .. i] = number(0, { formerNames = old }) end
            return component { fields = fields }
            "#
        ),
        budget
    );
}

#[test]
fn field_tables_that_contain_themselves_or_nest_too_deeply_are_invalid() {
    let mut h = Harness::new();
    for source in [
        "local t = optional(number()) t.inner = t return component { fields = { f = t } }",
        "local t = list(number()) t.element = t return component { fields = { f = t } }",
        "local m = {} local s = struct(m) m.again = s return component { fields = { f = s } }",
        "local t = map(text(), number()) t.value = t return component { fields = { f = t } }",
    ] {
        let error = h.refuse(source);
        let SchemaError::Invalid { message, .. } = &error else {
            panic!("{source}: {error:?}");
        };
        assert!(message.contains("nest more than 32 deep"), "{message}");
    }
    let nested = |depth: usize| {
        format!(
            "local t = number() for i = 1, {} do t = optional(t) end return component {{ fields = {{ f = t }} }}",
            depth - 1
        )
    };
    let deepest = h.vm.evaluate("Deep", &nested(32)).unwrap();
    assert_eq!(deepest.fields.len(), 1);
    assert!(matches!(h.refuse(&nested(33)), SchemaError::Invalid { .. }));
}

#[test]
fn the_world_services_and_loaders_are_out_of_reach() {
    let mut h = Harness::new();
    assert_runtime(
        &h.refuse(r#"game:GetService("Players")"#),
        "attempt to index nil",
    );
    assert_runtime(
        &h.refuse("workspace.Part:Destroy()"),
        "attempt to index nil",
    );
    assert_runtime(&h.refuse("script.Parent = nil"), "attempt to index nil");
    assert_runtime(&h.refuse(r#"Instance.new("Part")"#), "attempt to index nil");
    assert_eq!(
        h.refuse("return game"),
        SchemaError::NotAComponent {
            found: "nil".into()
        }
    );
    for call in [
        r#"require("x")"#,
        "getfenv()",
        "setfenv(1, {})",
        r#"loadstring("return 1")"#,
        r#"load("return 1")"#,
        "setmetatable(math, {})",
        "getmetatable(\"\").__index = nil",
        "rawset(math, \"pi\", 3)",
        "collectgarbage()",
        "pcall(error, \"x\")",
        "xpcall(error, print)",
        "newproxy(true)",
        "print(\"hi\")",
    ] {
        assert_runtime(&h.refuse(call), "attempt to call a nil value");
    }
    assert_runtime(&h.refuse("os.exit()"), "attempt to index nil with 'exit'");
    assert_runtime(
        &h.refuse(r#"io.open("x")"#),
        "attempt to index nil with 'open'",
    );
    assert_runtime(
        &h.refuse("debug.traceback()"),
        "attempt to index nil with 'traceback'",
    );
    assert_runtime(
        &h.refuse("coroutine.wrap(function() end)()"),
        "attempt to index nil with 'wrap'",
    );
}

#[test]
fn the_environment_holds_exactly_the_documented_names() {
    let h = Harness::new();
    let probe = |names: &[&str]| -> Vec<(String, String)> {
        let fields: Vec<String> = names
            .iter()
            .map(|n| format!("[\"{n}\"] = text(type({n}))"))
            .collect();
        let source = format!(
            "return component {{ fields = {{ {} }} }}",
            fields.join(", ")
        );
        let schema = h.vm.evaluate("Probe", &source).unwrap();
        schema
            .fields
            .iter()
            .map(|f| {
                let strata_component_store::Value::Text(t) = &f.default else {
                    panic!("{f:?}");
                };
                (f.name.to_string(), t.to_string())
            })
            .collect()
    };
    let provided = [
        "math",
        "string",
        "table",
        "pairs",
        "ipairs",
        "select",
        "type",
        "typeof",
        "tostring",
        "tonumber",
        "assert",
        "error",
        "number",
        "integer",
        "boolean",
        "text",
        "enum",
        "vector",
        "transform",
        "ref",
        "list",
        "map",
        "struct",
        "optional",
        "buffer",
        "component",
    ];
    for (name, kind) in probe(&provided) {
        let expected = if ["math", "string", "table"].contains(&name.as_str()) {
            "table"
        } else {
            "function"
        };
        assert_eq!(kind, expected, "{name}");
    }
    let absent = [
        "game",
        "workspace",
        "script",
        "Instance",
        "require",
        "getfenv",
        "setfenv",
        "loadstring",
        "load",
        "dofile",
        "setmetatable",
        "getmetatable",
        "rawset",
        "rawget",
        "rawequal",
        "rawlen",
        "pcall",
        "xpcall",
        "newproxy",
        "collectgarbage",
        "gcinfo",
        "os",
        "io",
        "debug",
        "coroutine",
        "print",
        "_G",
        "_ENV",
        "shared",
        "task",
        "wait",
        "delay",
        "spawn",
        "tick",
        "Players",
        "next",
        "unpack",
        "utf8",
        "bit32",
        "gcinfo",
        "_VERSION",
    ];
    for (name, kind) in probe(&absent) {
        assert_eq!(kind, "nil", "{name}");
    }

    // The libraries hold exactly the documented operations.
    let members =
        h.vm.evaluate(
            "Members",
            r#"
            local function names(lib)
                local out = {}
                for name in pairs(lib) do table.insert(out, name) end
                return table.concat(out, " ")
            end
            return component { fields = {
                math = text(names(math)),
                string = text(names(string)),
                table = text(names(table)),
            } }
            "#,
        )
        .unwrap();
    let listed: Vec<String> = members
        .fields
        .iter()
        .map(|f| format!("{}: {:?}", f.name, f.default))
        .collect();
    assert_eq!(
        listed,
        [
            "math: Text(\"abs ceil clamp floor fmod huge max min pi round sign sqrt\")",
            "string: Text(\"format len lower rep sub upper\")",
            "table: Text(\"concat insert\")",
        ]
    );
    // Methods on strings reach the same operations and nothing else.
    let methods =
        h.vm.evaluate(
            "Methods",
            r#"return component { fields = {
                up = text(("ab"):upper()),
                find = text(type(("ab").find)),
                byte = text(type(("ab").byte)),
            } }"#,
        )
        .unwrap();
    assert_eq!(
        methods.fields,
        vec![
            FieldDef::text("byte", "nil"),
            FieldDef::text("find", "nil"),
            FieldDef::text("up", "AB"),
        ]
    );
}

#[test]
fn shared_libraries_and_the_constructors_marks_are_read_only() {
    let mut h = Harness::new();
    for source in [
        "math.pi = 3",
        "string.x = 1",
        "table.insert = nil",
        "string.rep = function() return \"\" end",
    ] {
        assert_runtime(&h.refuse(source), "readonly");
    }
    // `still_works` checked after each that `math.pi` and `string.x` were untouched. A global
    // assignment stays in its own evaluation's environment too.
    assert_eq!(
        h.refuse("leaked = true return 1"),
        SchemaError::NotAComponent {
            found: "number".into()
        }
    );
    h.still_works();

    // The private keys that mark built tables are keys of every built table. `pairs` refuses
    // tables keyed by tables, and a loop that walks a built table itself is refused by the
    // iteration check, so no source reaches a mark, to write it or to return it (the marks are
    // read-only as well, shared by every evaluation).
    for tamper in [
        r#"for key in number() do if type(key) == "table" then key.leak = string.rep("y", 6e5) end end
        return component { fields = {} }"#,
        r#"for key in number() do if type(key) == "table" then return key end end"#,
        r#"local marks = {} for key in pairs(number()) do table.insert(marks, key) end return marks"#,
    ] {
        let refused = h.refuse(tamper);
        let shown = refused.to_string();
        assert!(
            shown.contains("for loop iterates pairs(t)")
                || shown.contains("pairs walks tables keyed by booleans"),
            "{tamper}: {shown}"
        );
    }
    h.still_works();
}

#[test]
fn wrong_return_shapes_are_not_components() {
    let mut h = Harness::new();
    let not = |found: &str| SchemaError::NotAComponent {
        found: found.into(),
    };
    // Nothing reachable makes a userdata (no `newproxy`, and the `buffer` and `vector` names
    // are constructors here), so the closest foreign value to return is a function.
    assert_runtime(
        &h.refuse("return newproxy(true)"),
        "attempt to call a nil value",
    );
    assert_eq!(h.refuse("return function() end"), not("function"));
    assert_eq!(h.refuse("return component"), not("function"));
    assert_eq!(h.refuse("return number"), not("function"));
    assert_eq!(h.refuse("return"), not("0 values"));
    assert_eq!(h.refuse("local x = 1"), not("0 values"));
    assert_eq!(h.refuse("return nil"), not("nil"));
    assert_eq!(h.refuse("return 42"), not("number"));
    assert_eq!(h.refuse("return 4.5"), not("number"));
    assert_eq!(h.refuse(r#"return "Health""#), not("string"));
    assert_eq!(h.refuse("return true"), not("boolean"));
    assert_eq!(
        h.refuse("return { fields = { hp = number(1) } }"),
        not("a table not built with component { ... }")
    );
    assert_eq!(
        h.refuse("return number(1)"),
        not("a table not built with component { ... }")
    );
    assert_eq!(
        h.refuse("return component { fields = {} }, component { fields = {} }"),
        not("2 values")
    );
    assert_eq!(
        h.refuse("return component { fields = {} }, nil"),
        not("2 values")
    );
    let error = h.refuse("return 1, 2, 3");
    assert_eq!(
        error.to_string(),
        "a schema must return one component { ... } table, not 3 values"
    );
}

#[test]
fn a_huge_but_legal_schema_succeeds_within_the_standard_budget() {
    let mut h = Harness::new();
    let source = r#"
        local fields = {}
        for i = 1, 2000 do fields["f" .. i] = number(i) end
        return component { fields = fields }
    "#;
    let started = Instant::now();
    let schema = h.vm.evaluate("Huge", source).unwrap();
    let took = started.elapsed();
    assert_eq!(schema.fields.len(), 2000);
    let names: Vec<&str> = schema.fields.iter().map(|f| &*f.name).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
    for field in &schema.fields {
        let i: f64 = field.name[1..].parse().unwrap();
        assert_eq!(*field, FieldDef::number(&field.name, i));
    }
    assert!(took < Budget::STANDARD.time, "{took:?}");
    h.store
        .install(schema.to_component_def("Huge"), &h.classes)
        .unwrap();

    // Richer fields too: 2,000 structs of a shared shape with enums and former names.
    let rich = r#"
        local shape = { x = number(1), y = integer(2), mode = enum({ "A", "B", "C" }, "B") }
        local fields = {}
        for i = 1, 2000 do
            fields["f" .. i] = struct(shape, { formerNames = { "old" .. i } })
        end
        return component { fields = fields }
    "#;
    let schema = h.evaluator.evaluate("Rich", rich).unwrap();
    assert_eq!(schema.fields.len(), 2000);
    h.store
        .install(schema.to_component_def("Rich"), &h.classes)
        .unwrap();
    h.still_works();
}

#[test]
fn budgets_can_be_tuned_and_their_errors_stand_apart() {
    let moderate = r#"
        local sum = 0
        for i = 1, 100000 do sum = sum + i end
        return component { fields = { sum = number(sum) } }
    "#;
    let standard = SchemaVm::new().unwrap();
    assert_eq!(
        standard.evaluate("Moderate", moderate).unwrap().fields,
        vec![FieldDef::number("sum", 5_000_050_000.0)]
    );

    let small = Budget {
        instructions: 10_000,
        ..Budget::STANDARD
    };
    let mut h = Harness::with_budget(small);
    assert_eq!(h.vm.budget(), small);
    assert_eq!(h.refuse(moderate), SchemaError::InstructionBudget(10_000));

    // The time budget stops what the instruction budget would let run.
    let quick = Budget {
        instructions: u64::MAX,
        time: Duration::from_millis(50),
        ..Budget::STANDARD
    };
    let mut h = Harness::with_budget(quick);
    let started = Instant::now();
    assert_eq!(h.refuse("while true do end"), SchemaError::TimeBudget(50));
    assert!(started.elapsed() < Duration::from_secs(5));

    let tight = Budget {
        memory: 256 * 1024,
        ..Budget::STANDARD
    };
    let big_string = r#"
        local s = string.rep("x", 1000000)
        return component { fields = { n = integer(#s) } }
    "#;
    assert_eq!(
        standard.evaluate("Big", big_string).unwrap().fields,
        vec![FieldDef::integer("n", 1_000_000)]
    );
    let mut h = Harness::with_budget(tight);
    assert_eq!(h.refuse(big_string), SchemaError::MemoryBudget(256 * 1024));

    // A script that raises the budgets' own words is a runtime error, not a budget error.
    let mut h = Harness::new();
    for words in ["instruction budget exhausted", "time budget exhausted"] {
        assert_eq!(
            h.refuse(&format!("error(\"{words}\")")),
            SchemaError::Runtime {
                message: words.into(),
                line: Some(1),
            }
        );
    }
    assert!(matches!(
        h.refuse("local t = nil\nreturn t.x"),
        SchemaError::Runtime { line: Some(2), .. }
    ));
    assert_ne!(
        SchemaError::InstructionBudget(10).to_string(),
        SchemaError::TimeBudget(10).to_string()
    );
}

#[test]
fn failures_are_cached_like_successes() {
    let mut evaluator = Evaluator::new().unwrap();
    let endless = "while true do end";
    let first = evaluator.evaluate("Endless", endless).unwrap_err();
    assert_eq!(first, SchemaError::InstructionBudget(1_000_000));
    assert_eq!((evaluator.evaluations(), evaluator.cache_hits()), (1, 0));
    let started = Instant::now();
    let second = evaluator.evaluate("Endless", endless).unwrap_err();
    assert!(
        started.elapsed() < Duration::from_millis(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(second, first);
    assert_eq!((evaluator.evaluations(), evaluator.cache_hits()), (1, 1));

    // The cache is keyed by the source: another name for the same text is still a hit.
    let syntax = "return component {";
    let a = evaluator.evaluate("A", syntax).unwrap_err();
    let b = evaluator.evaluate("B", syntax).unwrap_err();
    assert!(matches!(a, SchemaError::Syntax { .. }), "{a:?}");
    assert_eq!(a, b);
    assert_eq!((evaluator.evaluations(), evaluator.cache_hits()), (2, 2));

    let shape = r#"return component { name = "X", fields = {} }"#;
    let c = evaluator.evaluate("C", shape).unwrap_err();
    assert_eq!(evaluator.evaluate("C", shape).unwrap_err(), c);
    assert_eq!((evaluator.evaluations(), evaluator.cache_hits()), (3, 3));

    // The evaluator still evaluates, and caches, a good schema.
    let good = evaluator.evaluate("Normal", NORMAL).unwrap();
    assert_eq!(*good, normal_schema());
    let again = evaluator.evaluate("Normal", NORMAL).unwrap();
    assert!(std::sync::Arc::ptr_eq(&good, &again));
    assert_eq!((evaluator.evaluations(), evaluator.cache_hits()), (4, 4));
}

/// A refusal that must come quickly: every hostile call below would run for seconds in one
/// library call if it were reachable and uncapped.
#[track_caller]
fn refuse_quickly(h: &mut Harness, source: &str) -> SchemaError {
    let started = Instant::now();
    let error = h.refuse(source);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{}: {:?}",
        shorten(source),
        started.elapsed()
    );
    error
}

#[test]
fn long_library_calls_are_out_of_reach() {
    let mut h = Harness::new();
    // A plain find compares the needle at every position of the haystack inside one call,
    // where no interrupt reaches it: quadratic in the lengths.
    let find = r#"
        local haystack = string.rep("a", 2^19)
        local needle = string.rep("a", 2^17) .. "b"
        local at = CALL
        return component { fields = {} }
    "#;
    for call in [
        "string.find(haystack, needle, 1, true)",
        "haystack:find(needle, 1, true)",
        "haystack:match(needle)",
        "haystack:gsub(needle, '')",
    ] {
        assert_runtime(
            &refuse_quickly(&mut h, &find.replace("CALL", call)),
            "attempt to call",
        );
    }
    // One call that walks 2^26 slots.
    assert_runtime(
        &refuse_quickly(
            &mut h,
            "table.move({}, 1, 2^26, 2) return component { fields = {} }",
        ),
        "attempt to call a nil value",
    );
}

#[test]
fn the_value_operations_refuse_sizes_past_their_caps() {
    let mut h = Harness::new();
    let prelude = r#"
        local mib = string.rep("x", 2^20)
        local two = mib .. mib
        local half = string.rep("y", 2^19)
        local long = {}
        for i = 1, 70000 do long[i] = i end
    "#;
    let cases = [
        ("string.rep(\"x\", 2^20 + 1)", "string.rep"),
        ("string.rep(\"ab\", 2^19, \",\")", "string.rep"),
        ("string.upper(two)", "string.upper"),
        ("two:lower()", "string.lower"),
        ("string.sub(two, 1, 1)", "string.sub"),
        ("string.len(two)", "string.len"),
        ("string.format(\"%s%s\", mib, mib)", "string.format"),
        ("string.format(two)", "string.format"),
        ("table.concat({ half, half, half })", "table.concat"),
        ("table.concat(long, \",\")", "table.concat"),
        ("table.insert(long, 1, 0)", "table.insert"),
        ("tonumber(two)", "tonumber"),
        ("tostring(two)", "tostring"),
        // Luau converts numeric strings to counts and numbers to their text: the caps count
        // what Luau would make.
        ("string.rep(\"x\", \"1048577\")", "string.rep"),
        ("string.rep(\"x\", \" 0x100001 \")", "string.rep"),
        ("string.rep(12345, 2^18)", "string.rep"),
        ("(\"ab\"):rep(\"1e6\")", "string.rep"),
        (
            "table.concat(long, \",\", \"1\", \"70000\")",
            "table.concat",
        ),
        ("pairs(long)", "pairs"),
    ];
    for (call, operation) in cases {
        let source =
            format!("{prelude} local result = {call} return component {{ fields = {{}} }}");
        let error = refuse_quickly(&mut h, &source);
        let shown = error.to_string();
        assert!(
            shown.contains(operation) && shown.contains("cap"),
            "{call}: {shown}"
        );
    }
    // Within the caps they work.
    let schema =
        h.vm.evaluate(
            "Within",
            &format!(
                r#"{prelude}
                local parts = {{ "a", "b" }}
                table.insert(parts, "c")
                table.insert(parts, 1, "z")
                return component {{ fields = {{
                    joined = text(table.concat(parts, "-")),
                    rep = integer(#string.rep("x", 2^20)),
                    sub = text(string.sub(mib, 1, 3)),
                    upper = text(string.upper(string.sub(half, 1, 2))),
                    formatted = text(string.format("%d-%s-%.2f", 7, "s", 1.5)),
                }} }}"#
            ),
        )
        .unwrap();
    let defaults: Vec<String> = schema
        .fields
        .iter()
        .map(|f| format!("{}={:?}", f.name, f.default))
        .collect();
    assert_eq!(
        defaults,
        [
            "formatted=Text(\"7-s-1.50\")",
            "joined=Text(\"z-a-b-c\")",
            "rep=Integer(1048576)",
            "sub=Text(\"xxx\")",
            "upper=Text(\"YY\")",
        ]
    );
}

#[test]
fn the_clock_is_read_at_every_interrupt() {
    // Each turn of this loop spends about a millisecond in one library call and takes two
    // interrupts; the deadline must stop it within a turn or two, not hundreds of turns later.
    // The memory budget is ample so that the garbage the loop leaves does not end it first.
    let quick = Budget {
        instructions: u64::MAX,
        time: Duration::from_millis(20),
        memory: 512 * 1024 * 1024,
        ..Budget::STANDARD
    };
    let vm = SchemaVm::with_budget(quick).unwrap();
    let source = r#"
        local s = string.rep("a", 2^20)
        while true do s = string.upper(s) end
    "#;
    let started = Instant::now();
    assert_eq!(
        vm.evaluate("Slow", source),
        Err(SchemaError::TimeBudget(20))
    );
    let took = started.elapsed();
    assert!(took < Duration::from_millis(150), "{took:?}");
}

#[test]
fn overlong_sources_are_refused_before_compiling() {
    let mut h = Harness::new();
    let limit = Budget::STANDARD.source;
    let padded = |len: usize| {
        let mut source = String::from("return component { fields = {} }\n--");
        source.push_str(&"x".repeat(len - source.len()));
        source
    };
    let error = refuse_quickly(&mut h, &padded(limit + 1));
    assert_eq!(
        error,
        SchemaError::SourceTooLong {
            length: limit + 1,
            limit
        }
    );
    assert_eq!(
        error.to_string(),
        "the source is 1048577 bytes, over the limit of 1048576"
    );
    // At the limit it compiles and evaluates.
    assert!(h.vm.evaluate("Long", &padded(limit)).is_ok());
}

/// Found by fuzzing (`fuzz/regressions/schema_source/`): a source whose first byte is a Luau
/// bytecode version was handed to the VM as bytecode, which Luau loads without verifying (a
/// read past the buffer under AddressSanitizer, and a way around every check made on source
/// text). Every source is compiled as text.
#[test]
fn a_source_that_begins_like_bytecode_is_compiled_as_text() {
    let mut evaluator = Evaluator::new().unwrap();
    for source in ["\u{3}\u{0}r", "\u{3}", "\u{6}return 1", "\u{4}\u{1}\u{2}"] {
        let error = evaluator.evaluate("bytes.luau", source).unwrap_err();
        assert!(
            matches!(error, SchemaError::Syntax { .. }),
            "{source:?} gave {error:?}, not a syntax error"
        );
    }
    // Real bytecode, compiled from a valid schema, is refused the same way.
    let bytecode = mlua::chunk::Compiler::new()
        .compile("return component { fields = { x = number(1) } }")
        .unwrap();
    if let Ok(text) = std::str::from_utf8(&bytecode) {
        let error = evaluator.evaluate("bytecode.luau", text).unwrap_err();
        assert!(matches!(error, SchemaError::Syntax { .. }), "{error:?}");
    }
}
