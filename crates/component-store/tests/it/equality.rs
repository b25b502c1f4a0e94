//! Equal-write detection: a write is "equal", and changes nothing, exactly when the stored value
//! would stay bit for bit the same. For floating fields that is not IEEE `==`: `-0.0` over `0.0`
//! is a change (the sign is kept), and NaN over the same NaN is not.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::common::World;
use strata_arena::{ClassId, Transform, Vec3};
use strata_component_store::{
    ComponentDef, ComponentHandle, ComponentId, FieldDef, FieldId, FieldType, InstanceRef,
    ListValue, MapKey, StructField, Value,
};

struct Floats {
    w: World,
    c: ComponentId,
    e: InstanceRef,
}

impl Floats {
    fn new() -> Self {
        let mut w = World::new();
        let c = w.install(
            ComponentDef::new("Floats")
                .field(FieldDef::number("n", 0.0))
                .field(FieldDef::vector("v", Vec3::ZERO))
                .field(FieldDef::transform("x", Transform::IDENTITY))
                .field(FieldDef::list("ln", FieldType::Number))
                .field(FieldDef::list("lv", FieldType::Vector))
                .field(FieldDef::structure(
                    "s",
                    vec![StructField {
                        name: "a".into(),
                        ty: FieldType::Number,
                        default: Value::Number(0.0),
                    }],
                ))
                .field(FieldDef::map("m", FieldType::Integer, FieldType::Number))
                .field(FieldDef::optional("o", FieldType::Vector))
                .observed(true),
        );
        let e = w.spawn(ClassId::ENTITY);
        w.store.add(e, ClassId::ENTITY, c, []).unwrap();
        w.store.drain_events();
        Self { w, c, e }
    }

    fn field(&self, name: &str) -> FieldId {
        self.w.field(self.c, name)
    }

    /// Runs `write` twice: the first must change the field (one tick, one event, a dirty bit),
    /// the second, of the same bits, must change nothing.
    #[track_caller]
    fn check(&mut self, name: &str, mut write: impl FnMut(&mut Self) -> bool) {
        let field = self.field(name);
        self.w.store.take_dirty(self.c).unwrap();
        let tick = self.w.store.tick();
        assert!(write(self), "{name}: the first write is a change");
        assert_eq!(self.w.store.tick().0, tick.0 + 1, "{name}: one tick");
        assert_eq!(self.w.store.drain_events().len(), 1, "{name}: one event");
        let dirty = self.w.store.take_dirty(self.c).unwrap();
        assert!(
            dirty.len() == 1 && dirty[0].1.contains(field),
            "{name}: dirty"
        );
        let tick = self.w.store.tick();
        assert!(!write(self), "{name}: the same bits again are no change");
        assert_eq!(self.w.store.tick(), tick, "{name}: no tick");
        assert!(self.w.store.drain_events().is_empty(), "{name}: no event");
        assert!(
            self.w.store.take_dirty(self.c).unwrap().is_empty(),
            "{name}: not dirty"
        );
    }
}

fn neg_zero_vector() -> Vec3 {
    Vec3::new(-0.0, 0.0, 0.0)
}

fn nan_vector() -> Vec3 {
    Vec3::new(f32::NAN, 0.0, 0.0)
}

#[test]
fn negative_zero_over_zero_is_a_change_on_every_write_route() {
    let mut f = Floats::new();
    let (c, e) = (f.c, f.e);
    let n = f.field("n");
    f.check("n", |f| f.w.store.write(e, c, n, -0.0_f64).unwrap());
    assert!(f.w.store.get::<f64>(e, c, n).unwrap().is_sign_negative());
    f.check("n", |f| {
        f.w.store.write_value(e, c, n, Value::Number(0.0)).unwrap()
    });
    assert!(f.w.store.get::<f64>(e, c, n).unwrap().is_sign_positive());
    f.check("n", |f| {
        let handle = ComponentHandle::new(&f.w.store, e, c).unwrap();
        handle.write(&mut f.w.store, n, -0.0_f64).unwrap()
    });
    f.check("n", |f| {
        f.w.store
            .write_value_at(c, 0, n, Value::Number(0.0))
            .unwrap()
    });
    f.check("n", |f| {
        let mut writer = f.w.store.column_writer::<f64>(c, n).unwrap();
        writer.write(0, -0.0).unwrap()
    });
    f.check("n", |f| {
        let mut writer = f.w.store.column_writer::<f64>(c, n).unwrap();
        writer.update_indexed(1, |k| (k, k), |_, _| 0.0).unwrap() == 1
    });
    f.check("n", |f| {
        let mut writer = f.w.store.column_writer::<f64>(c, n).unwrap();
        writer.update_dense(&[()], |_, ()| -0.0).unwrap() == 1
    });

    let v = f.field("v");
    f.check("v", |f| {
        f.w.store.write(e, c, v, neg_zero_vector()).unwrap()
    });
    f.check("v", |f| {
        f.w.store
            .write_value(e, c, v, Value::Vector(Vec3::ZERO))
            .unwrap()
    });

    let x = f.field("x");
    let mut flipped = Transform::IDENTITY;
    flipped.rows[0][1] = -0.0;
    f.check("x", |f| f.w.store.write(e, c, x, flipped).unwrap());
    f.check("x", |f| {
        f.w.store
            .write_value(e, c, x, Value::Transform(Box::new(Transform::IDENTITY)))
            .unwrap()
    });

    let ln = f.field("ln");
    f.w.store
        .list_mut(e, c, ln)
        .unwrap()
        .push(Value::Number(0.0))
        .unwrap();
    f.w.store.drain_events();
    f.check("ln", |f| {
        let mut list = f.w.store.list_mut(e, c, ln).unwrap();
        list.replace(vec![Value::Number(-0.0)]).unwrap()
    });
    f.check("ln", |f| {
        let zero = Value::List(ListValue::from_vec(vec![Value::Number(0.0)]));
        f.w.store.write_value(e, c, ln, zero).unwrap()
    });

    let lv = f.field("lv");
    f.w.store
        .list_mut(e, c, lv)
        .unwrap()
        .push(Value::Vector(Vec3::ZERO))
        .unwrap();
    f.w.store.drain_events();
    f.check("lv", |f| {
        let mut list = f.w.store.list_mut(e, c, lv).unwrap();
        list.replace(vec![Value::Vector(neg_zero_vector())])
            .unwrap()
    });

    let s = f.field("s");
    f.check("s", |f| {
        let value = Value::Struct(Arc::from(vec![Value::Number(-0.0)]));
        f.w.store.write_value(e, c, s, value).unwrap()
    });

    let m = f.field("m");
    let map = |x: f64| {
        let entries: BTreeMap<MapKey, Value> = [(MapKey::Integer(1), Value::Number(x))].into();
        Value::Map(Arc::new(entries))
    };
    f.w.store.write_value(e, c, m, map(0.0)).unwrap();
    f.w.store.drain_events();
    f.check("m", |f| f.w.store.write_value(e, c, m, map(-0.0)).unwrap());

    let o = f.field("o");
    let optional = |v: Vec3| Value::Optional(Some(Box::new(Value::Vector(v))));
    f.w.store
        .write_value(e, c, o, optional(Vec3::ZERO))
        .unwrap();
    f.w.store.drain_events();
    f.check("o", |f| {
        f.w.store
            .write_value(e, c, o, optional(neg_zero_vector()))
            .unwrap()
    });
}

#[test]
fn nan_over_the_same_nan_is_no_change_on_every_write_route() {
    let mut f = Floats::new();
    let (c, e) = (f.c, f.e);
    let n = f.field("n");
    f.check("n", |f| f.w.store.write(e, c, n, f64::NAN).unwrap());
    f.check("n", |f| {
        f.w.store.write_value(e, c, n, Value::Number(1.0)).unwrap()
    });
    f.check("n", |f| {
        f.w.store
            .write_value(e, c, n, Value::Number(f64::NAN))
            .unwrap()
    });
    f.check("n", |f| {
        f.w.store
            .write_value_at(c, 0, n, Value::Number(2.0))
            .unwrap()
    });
    f.check("n", |f| {
        let mut writer = f.w.store.column_writer::<f64>(c, n).unwrap();
        writer.write(0, f64::NAN).unwrap()
    });
    f.check("n", |f| {
        let mut writer = f.w.store.column_writer::<f64>(c, n).unwrap();
        writer.write(0, 3.0).unwrap()
    });
    f.check("n", |f| {
        let mut writer = f.w.store.column_writer::<f64>(c, n).unwrap();
        writer.update_dense(&[()], |_, ()| f64::NAN).unwrap() == 1
    });

    let v = f.field("v");
    f.check("v", |f| f.w.store.write(e, c, v, nan_vector()).unwrap());
    f.check("v", |f| {
        f.w.store
            .write_value(e, c, v, Value::Vector(Vec3::ONE))
            .unwrap()
    });
    f.check("v", |f| {
        f.w.store
            .write_value(e, c, v, Value::Vector(nan_vector()))
            .unwrap()
    });

    let x = f.field("x");
    let mut nan = Transform::IDENTITY;
    nan.rows[2][3] = f32::NAN;
    f.check("x", |f| f.w.store.write(e, c, x, nan).unwrap());

    let lv = f.field("lv");
    f.check("lv", |f| {
        let mut list = f.w.store.list_mut(e, c, lv).unwrap();
        list.replace(vec![Value::Vector(nan_vector())]).unwrap()
    });
    f.check("lv", |f| {
        let value = Value::List(ListValue::from_vec(vec![Value::Vector(Vec3::ONE)]));
        f.w.store.write_value(e, c, lv, value).unwrap()
    });

    let s = f.field("s");
    f.check("s", |f| {
        let value = Value::Struct(Arc::from(vec![Value::Number(f64::NAN)]));
        f.w.store.write_value(e, c, s, value).unwrap()
    });

    let o = f.field("o");
    f.check("o", |f| {
        let value = Value::Optional(Some(Box::new(Value::Vector(nan_vector()))));
        f.w.store.write_value(e, c, o, value).unwrap()
    });
}
