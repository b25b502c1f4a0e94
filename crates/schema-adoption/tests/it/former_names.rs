//! Former names are unambiguous: no two fields name the same former name, and no former name is
//! a current field name. A schema that breaks this is refused with a clear message, and adoption
//! never hands one source field to two fields, even for a definition built without a schema.

use std::fmt::Write as _;
use std::sync::Arc;

use strata_arena::{Arena, ClassId};
use strata_component_store::{ComponentDef, FieldDef, InstanceRef, Store, Value};
use strata_schema_adoption::{SchemaError, SchemaSync, SchemaVm, SourceField, SourceRow, adopt};

#[track_caller]
fn refused(source: &str) -> String {
    match SchemaVm::new().unwrap().evaluate("Probe", source) {
        Ok(schema) => panic!("accepted: {source}\n{schema:?}"),
        Err(SchemaError::Invalid { message, .. }) => message,
        Err(SchemaError::FormerNames(conflict)) => conflict.to_string(),
        Err(other) => panic!("not an invalid schema: {other:?}"),
    }
}

#[test]
fn two_fields_may_not_share_a_former_name() {
    let mut listing = String::new();
    for source in [
        r#"return component { fields = {
            a = number(0, { formerNames = { "old" } }),
            b = number(0, { formerNames = { "old" } }),
        } }"#,
        r#"return component { fields = {
            a = number(0, { formerNames = { "x", "old" } }),
            b = text("", { formerNames = { "y" } }),
            c = integer(0, { formerNames = { "old", "z" } }),
        } }"#,
    ] {
        writeln!(listing, "{}", refused(source)).unwrap();
    }
    insta::assert_snapshot!(listing, @r"
    fields `a` and `b` both name `old` as a former name; a saved value can go to one field only
    fields `a` and `c` both name `old` as a former name; a saved value can go to one field only
    ");
}

#[test]
fn a_former_name_may_not_be_a_current_field_name() {
    let mut listing = String::new();
    for source in [
        r#"return component { fields = {
            a = number(0),
            b = number(0, { formerNames = { "a" } }),
        } }"#,
        r#"return component { fields = { a = number(0, { formerNames = { "a" } }) } }"#,
    ] {
        writeln!(listing, "{}", refused(source)).unwrap();
    }
    insta::assert_snapshot!(listing, @r"
    field `b` names `a` as a former name, but `a` is a current field; its saved value belongs to `a`
    field `a` names itself as a former name
    ");
    // A repeated former name within one field is harmless and accepted.
    let schema = SchemaVm::new()
        .unwrap()
        .evaluate(
            "Probe",
            r#"return component { fields = { a = number(0, { formerNames = { "old", "old" } }) } }"#,
        )
        .unwrap();
    assert_eq!(schema.fields.len(), 1);
}

#[test]
fn a_redefinition_with_a_shared_former_name_keeps_the_previous_one() {
    let mut arena = Arena::standard();
    let def = arena.create(ClassId::COMPONENT_DEFINITION, None).unwrap();
    arena.set_name(def, "Stats").unwrap();
    arena
        .set_definition_source(def, "return component { fields = { old = number(0) } }")
        .unwrap();
    let mut store = Store::new();
    let mut sync = SchemaSync::new().unwrap();
    sync.sync(&arena, &mut store);
    let stats = store.component("Stats").unwrap();
    let e = arena.create(ClassId::ENTITY, None).unwrap();
    let at = InstanceRef::new(e, arena.slot_of(e).unwrap());
    let old = store.field(stats, "old").unwrap();
    store
        .add(at, ClassId::ENTITY, stats, [(old, Value::Number(7.0))])
        .unwrap();

    arena
        .set_definition_source(
            def,
            r#"return component { fields = {
                a = number(0, { formerNames = { "old" } }),
                b = number(0, { formerNames = { "old" } }),
            } }"#,
        )
        .unwrap();
    let report = sync.sync(&arena, &mut store);
    assert_eq!(report.diagnostics.len(), 1, "{report}");
    assert!(report.changed.is_empty(), "{report}");
    assert_eq!(
        store.get_value(at, stats, store.field(stats, "old").unwrap()),
        Ok(Value::Number(7.0)),
        "the previous definition and its row stay"
    );
}

#[test]
fn adoption_gives_a_source_field_to_one_field_at_most() {
    // `adopt` takes a definition as given, even one the store would refuse to install (one
    // former name named twice, a current field named as a former name): the current name
    // claims its value first, then the fields in definition order, and a claimed value goes to
    // no other field.
    let mut def = ComponentDef::new("Stats");
    def.fields = vec![
        FieldDef::number("a", 1.0).former_names(&["old"]),
        FieldDef::number("b", 2.0).former_names(&["old"]),
        FieldDef::number("c", 3.0).former_names(&["a"]),
    ];
    let mut arena = Arena::standard();
    let mut spawn = || {
        let id = arena.create(ClassId::ENTITY, None).unwrap();
        InstanceRef::new(id, arena.slot_of(id).unwrap())
    };
    let (first, second) = (spawn(), spawn());
    let row = |at: InstanceRef, fields: &[(&str, f64)]| SourceRow {
        at,
        version: 1,
        fields: fields
            .iter()
            .map(|(name, value)| SourceField {
                name: Arc::from(*name),
                value: Value::Number(*value),
            })
            .collect(),
        types: None,
    };
    let adopted = adopt(
        &def,
        None,
        vec![
            row(first, &[("old", 7.0)]),
            row(second, &[("a", 8.0), ("old", 7.0)]),
        ],
        |_| Some(ClassId::ENTITY),
    );
    let values = |i: usize| -> Vec<Value> { adopted.rows[i].1.clone() };
    assert_eq!(
        values(0),
        vec![Value::Number(7.0), Value::Number(2.0), Value::Number(3.0)],
        "`a` takes `old`; `b` finds it taken"
    );
    assert_eq!(
        values(1),
        vec![Value::Number(8.0), Value::Number(7.0), Value::Number(3.0)],
        "`a` keeps its own value, `b` takes `old`, `c` finds `a` taken"
    );
    insta::assert_snapshot!(adopted.report.to_string(), @r"
    component Stats (version 1)
      adopted: 2 (e.g. #1, #2)
      unadopted: 0
      field a: kept 1 (e.g. #2); renamed from old 1 (e.g. #1)
      field b: renamed from old 1 (e.g. #2); defaulted 1 (e.g. #1)
      field c: defaulted 2 (e.g. #1, #2)
    ");
}
