//! Every query test runs twice: through the cache (`Query::new`) and uncached
//! (`Query::uncached`, matches built afresh at every call). A test is a function taking the
//! [`Caching`] it runs under; [`both_ways!`] makes the two tests of each, `cached::NAME` and
//! `uncached::NAME`, and a third that fails if the file holds a test it does not list.

use strata_query::{Query, QueryError, QuerySpec};

/// How a test builds its queries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caching {
    Cached,
    Uncached,
}

impl Caching {
    /// A query for `spec`, built this way.
    pub fn query(self, spec: QuerySpec) -> Result<Query, QueryError> {
        Query::with_caching(spec, self == Self::Cached)
    }

    /// Whether a read rebuilds, given whether a cached query's stamp moved: an uncached
    /// query always does.
    pub fn rebuilds(self, stamp_moved: bool) -> bool {
        stamp_moved || self == Self::Uncached
    }

    /// Checks `query`'s generation after one read that refreshed it once, given its
    /// generation `before` and whether a cached query's stamp moved (a cached query rebuilds
    /// exactly then, an uncached one always); returns the generation now.
    pub fn after_read(self, query: &Query, before: u64, stamp_moved: bool) -> u64 {
        let expected = before + u64::from(self.rebuilds(stamp_moved));
        assert_eq!(
            query.generation(),
            expected,
            "{self:?}: the stamp {} moved",
            if stamp_moved { "had" } else { "had not" }
        );
        expected
    }
}

/// Checks that `source` (a test file) holds no top-level `#[test]` of its own and that every function
/// taking a `Caching` is in `listed`.
pub fn assert_every_test_listed(source: &str, listed: &[&str]) {
    // A test at the top level of the file (a proptest block's are indented and draw the
    // caching themselves).
    let attribute = concat!("#[", "test]");
    assert!(
        !source.lines().any(|line| line == attribute),
        "a test outside both_ways! runs one way only"
    );
    for line in source.lines() {
        let line = line.trim_start();
        let Some(rest) = line.strip_prefix("fn ") else {
            continue;
        };
        // A test takes its caching as its only argument; helpers take it among others.
        if let Some((name, args)) = rest.split_once('(')
            && (args.starts_with("mode: Caching)") || args.starts_with("_mode: Caching)"))
        {
            assert!(listed.contains(&name), "{name} is not in both_ways!");
        }
    }
}

/// Makes `cached::NAME` and `uncached::NAME` tests of each listed `fn NAME(Caching)`.
macro_rules! both_ways {
    ($($name:ident),* $(,)?) => {
        mod cached {
            $(
                #[test]
                fn $name() {
                    super::$name(crate::common::Caching::Cached);
                }
            )*
        }
        mod uncached {
            $(
                #[test]
                fn $name() {
                    super::$name(crate::common::Caching::Uncached);
                }
            )*
        }
        #[test]
        fn every_test_runs_cached_and_uncached() {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests")
                .join(format!("{}.rs", module_path!().replace("::", "/")));
            let source = std::fs::read_to_string(&path).unwrap();
            crate::common::assert_every_test_listed(&source, &[$(stringify!($name)),*]);
        }
    };
}
pub(crate) use both_ways;
