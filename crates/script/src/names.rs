//! The names a component may have in the game environment: every component is a global of its
//! name (`Health`), so its name must be a Luau identifier, no keyword, and no global the
//! environment already has (`print`, `math`, `world`, ...).
//!
//! Invariant: the game VM installs a component global only under a name
//! [`component_name_problem`] accepts, so a component never hides a global, and the type
//! definitions declare only such names, so they are always valid Luau. A test checks
//! [`STANDARD_GLOBALS`] holds every global the game environment has.

use super::types::GLOBALS;

/// Luau's reserved words, and the words it gives a meaning in some places (`continue`,
/// `export`, `type`, `typeof`), which a type definition cannot use as a name.
pub const LUAU_KEYWORDS: &[&str] = &[
    "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "if", "in", "local",
    "nil", "not", "or", "repeat", "return", "then", "true", "until", "while", "continue", "export",
    "type", "typeof",
];

/// The globals of Luau's standard environment as the game environment keeps them (the unsafe
/// ones it removes are not among them).
pub const STANDARD_GLOBALS: &[&str] = &[
    "_G",
    "_VERSION",
    "assert",
    "bit32",
    "buffer",
    "coroutine",
    "error",
    "getmetatable",
    "integer",
    "ipairs",
    "math",
    "next",
    "pairs",
    "pcall",
    "print",
    "rawequal",
    "rawget",
    "rawlen",
    "rawset",
    "select",
    "setmetatable",
    "string",
    "table",
    "tonumber",
    "tostring",
    "type",
    "typeof",
    "unpack",
    "utf8",
    "vector",
    "xpcall",
];

/// Whether `name` is a Luau identifier: ASCII letters, digits and `_`, not starting with a
/// digit.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Why `name` cannot name a component in the game environment, or `None` when it can.
pub fn component_name_problem(name: &str) -> Option<String> {
    if !is_identifier(name) {
        return Some(format!(
            "`{name}` is not a Luau identifier (letters, digits and `_`, not starting with a digit), so scripts could not name the component"
        ));
    }
    if LUAU_KEYWORDS.contains(&name) {
        return Some(format!(
            "`{name}` is a Luau keyword, so scripts could not name the component"
        ));
    }
    if STANDARD_GLOBALS.contains(&name) || GLOBALS.iter().any(|(global, _)| *global == name) {
        return Some(format!(
            "`{name}` is a global of the game environment, which a component of that name would hide"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_keywords_and_globals_are_told_apart() {
        for ok in ["Health", "_private", "Team2", "x"] {
            assert_eq!(component_name_problem(ok), None, "{ok}");
        }
        for bad in [
            "my comp", "1bad", "", "é", "end", "type", "print", "math", "world",
        ] {
            assert!(component_name_problem(bad).is_some(), "{bad}");
        }
    }
}
