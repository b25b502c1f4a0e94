//! The source pass a schema goes through before it compiles: every generic `for` has its
//! iterator checked at run time.
//!
//! Luau's generic `for` accepts a table in place of an iterator function and then walks the
//! table in its internal order, which for keys that are tables or functions follows their
//! memory addresses. A schema could turn that order into a default value, so the same source
//! would give different definitions in different runs. The environment's own `pairs` walks keys
//! in a fixed order and refuses keys without one; this pass makes sure no loop goes around it.
//!
//! Invariant: in the text handed to the compiler, the expressions of every generic `for` are
//! the arguments of [`ITERATE`], the environment's check that the first of them is a function,
//! so no loop iterates a table directly; the pass inserts text only inside lines, never a line
//! break, so every line number Luau reports is the line of the source. A source that names
//! [`ITERATE`] itself, or puts a `function` expression at the top level of a loop's head (whose
//! body the pass would have to match `end` for), is refused before it compiles.

use std::borrow::Cow;

/// The name of the environment's iterator check. A source may not use it.
pub(crate) const ITERATE: &str = "__strata_iterate";

/// Why the pass refused a source, with the line it refers to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Refused {
    pub(crate) message: String,
    pub(crate) line: u32,
}

/// What kind of token the lexer found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// An identifier or a keyword.
    Name,
    /// One punctuation byte.
    Punct(u8),
    /// A string or a number.
    Literal,
}

#[derive(Clone, Copy, Debug)]
struct Token {
    kind: Kind,
    start: usize,
    end: usize,
    line: u32,
}

/// The source with every generic `for` head's expressions wrapped in a call of [`ITERATE`].
pub(crate) fn guard_iteration(source: &str) -> Result<Cow<'_, str>, Refused> {
    let tokens = Lexer::new(source).run();
    let text = |t: &Token| &source[t.start..t.end];
    let name = |t: &Token, word: &str| t.kind == Kind::Name && text(t) == word;
    if let Some(t) = tokens.iter().find(|t| name(t, ITERATE)) {
        return Err(Refused {
            message: format!("the name {ITERATE} is reserved"),
            line: t.line,
        });
    }
    // Byte positions where text goes in, in ascending order.
    let mut inserts: Vec<(usize, &'static str)> = Vec::new();
    let mut at = 0;
    while at < tokens.len() {
        if !name(&tokens[at], "for") {
            at += 1;
            continue;
        }
        let Some(head) = generic_head(&tokens, at + 1, &name)? else {
            at += 1;
            continue;
        };
        inserts.push((tokens[head.first].start, "__strata_iterate("));
        inserts.push((head.close, ")"));
        at = head.first;
    }
    if inserts.is_empty() {
        return Ok(Cow::Borrowed(source));
    }
    let mut out = String::with_capacity(source.len() + inserts.len() * 12);
    let mut copied = 0;
    for (position, text) in inserts {
        out.push_str(&source[copied..position]);
        out.push_str(text);
        copied = position;
    }
    out.push_str(&source[copied..]);
    Ok(Cow::Owned(out))
}

/// The expressions of a generic `for` head: from token `first` up to the `do` that ends the
/// head (at least one token lies between), their text ending at byte `close`.
struct Head {
    first: usize,
    close: usize,
}

/// Finds the head of the loop whose `for` precedes token `from`: `None` for a numeric loop or
/// a head that never closes (the compiler reports those).
fn generic_head(
    tokens: &[Token],
    from: usize,
    name: &impl Fn(&Token, &str) -> bool,
) -> Result<Option<Head>, Refused> {
    let mut depth = 0usize;
    let mut at = from;
    // The variables: up to `in` (generic) or `=` (numeric).
    loop {
        let Some(t) = tokens.get(at) else {
            return Ok(None);
        };
        match t.kind {
            Kind::Punct(b'(' | b'[' | b'{') => depth += 1,
            Kind::Punct(b')' | b']' | b'}') => depth = depth.saturating_sub(1),
            Kind::Punct(b'=') if depth == 0 => return Ok(None),
            _ if depth == 0 && name(t, "in") => break,
            _ => {}
        }
        at += 1;
    }
    let first = at + 1;
    at = first;
    loop {
        let Some(t) = tokens.get(at) else {
            return Ok(None);
        };
        match t.kind {
            Kind::Punct(b'(' | b'[' | b'{') => depth += 1,
            Kind::Punct(b')' | b']' | b'}') => depth = depth.saturating_sub(1),
            _ if depth == 0 && name(t, "do") => {
                if at == first {
                    return Ok(None);
                }
                // Tokens inside an interpolated string follow the string's own token, so the
                // head's text ends where its furthest token does.
                let close = tokens[first..at].iter().map(|t| t.end).max().unwrap_or(0);
                return Ok(Some(Head { first, close }));
            }
            _ if depth == 0 && name(t, "function") => {
                return Err(Refused {
                    message: "a function expression in a for loop's head must be in parentheses"
                        .to_owned(),
                    line: t.line,
                });
            }
            _ => {}
        }
        at += 1;
    }
}

/// A Luau lexer that knows only what the pass needs: names, brackets and `=`, with strings
/// (interpolated ones included), numbers and comments skipped whole.
struct Lexer<'a> {
    bytes: &'a [u8],
    at: usize,
    line: u32,
    tokens: Vec<Token>,
}

impl<'a> Lexer<'a> {
    fn new(source: &'a str) -> Self {
        Self {
            bytes: source.as_bytes(),
            at: 0,
            line: 1,
            tokens: Vec::new(),
        }
    }

    fn run(mut self) -> Vec<Token> {
        self.code(false);
        self.tokens
    }

    fn peek(&self, ahead: usize) -> Option<u8> {
        self.bytes.get(self.at + ahead).copied()
    }

    /// Moves past one byte, counting lines.
    fn bump(&mut self) {
        if self.bytes.get(self.at) == Some(&b'\n') {
            self.line += 1;
        }
        self.at += 1;
    }

    fn push(&mut self, kind: Kind, start: usize, line: u32) {
        self.tokens.push(Token {
            kind,
            start,
            end: self.at,
            line,
        });
    }

    /// Lexes code to the end of the source or, inside an interpolation (`nested`), to the `}`
    /// that closes it, which it consumes.
    fn code(&mut self, nested: bool) {
        let mut braces = 0usize;
        while let Some(byte) = self.peek(0) {
            let (start, line) = (self.at, self.line);
            match byte {
                b'-' if self.peek(1) == Some(b'-') => self.comment(),
                b'[' if self.long_bracket_level().is_some() => {
                    self.long_bracket();
                    self.push(Kind::Literal, start, line);
                }
                b'"' | b'\'' => {
                    self.quoted(byte);
                    self.push(Kind::Literal, start, line);
                }
                b'`' => {
                    // The string's token goes first and takes its end once the string is read,
                    // so tokens stay in source order with the code of its `{...}` parts after it.
                    let index = self.tokens.len();
                    self.push(Kind::Literal, start, line);
                    self.interpolated();
                    self.tokens[index].end = self.at;
                }
                b'0'..=b'9' => {
                    self.number();
                    self.push(Kind::Literal, start, line);
                }
                b'.' if self.peek(1).is_some_and(|b| b.is_ascii_digit()) => {
                    self.number();
                    self.push(Kind::Literal, start, line);
                }
                b'A'..=b'Z' | b'a'..=b'z' | b'_' => {
                    while self
                        .peek(0)
                        .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
                    {
                        self.bump();
                    }
                    self.push(Kind::Name, start, line);
                }
                b'}' if nested && braces == 0 => {
                    self.bump();
                    return;
                }
                _ if byte.is_ascii_whitespace() => self.bump(),
                _ => {
                    match byte {
                        b'{' => braces += 1,
                        b'}' => braces = braces.saturating_sub(1),
                        _ => {}
                    }
                    self.bump();
                    self.push(Kind::Punct(byte), start, line);
                }
            }
        }
    }

    /// At `--`: a line comment, or a long comment when a long bracket follows.
    fn comment(&mut self) {
        self.bump();
        self.bump();
        if self.peek(0) == Some(b'[') && self.long_bracket_level().is_some() {
            self.long_bracket();
            return;
        }
        while self.peek(0).is_some_and(|b| b != b'\n') {
            self.bump();
        }
    }

    /// At `[`: the level of the long bracket that opens here (`[[` is 0, `[==[` is 2), if one
    /// does.
    fn long_bracket_level(&self) -> Option<usize> {
        let mut level = 0;
        while self.peek(1 + level) == Some(b'=') {
            level += 1;
        }
        (self.peek(1 + level) == Some(b'[')).then_some(level)
    }

    /// At `[`: skips a long bracket and everything to its closing bracket of the same level.
    fn long_bracket(&mut self) {
        let level = self.long_bracket_level().unwrap_or(0);
        for _ in 0..level + 2 {
            self.bump();
        }
        while let Some(byte) = self.peek(0) {
            if byte == b']'
                && (1..=level).all(|k| self.peek(k) == Some(b'='))
                && self.peek(level + 1) == Some(b']')
            {
                for _ in 0..level + 2 {
                    self.bump();
                }
                return;
            }
            self.bump();
        }
    }

    /// At a quote: skips the string to its closing quote (or the end of its line).
    fn quoted(&mut self, quote: u8) {
        self.bump();
        while let Some(byte) = self.peek(0) {
            match byte {
                b'\\' => {
                    self.bump();
                    self.bump();
                }
                b'\n' => return,
                _ if byte == quote => {
                    self.bump();
                    return;
                }
                _ => self.bump(),
            }
        }
    }

    /// At a backtick: skips the literal text of an interpolated string and lexes the code of
    /// its `{...}` parts.
    fn interpolated(&mut self) {
        self.bump();
        while let Some(byte) = self.peek(0) {
            match byte {
                b'\\' => {
                    self.bump();
                    self.bump();
                }
                b'`' => {
                    self.bump();
                    return;
                }
                b'{' => {
                    self.bump();
                    self.code(true);
                }
                _ => self.bump(),
            }
        }
    }

    /// At a digit (or a `.` before one): skips a number, exponent signs included.
    fn number(&mut self) {
        let hex = self.peek(0) == Some(b'0') && matches!(self.peek(1), Some(b'x' | b'X'));
        while let Some(byte) = self.peek(0) {
            let signed_exponent = !hex
                && matches!(byte, b'+' | b'-')
                && matches!(self.bytes.get(self.at - 1), Some(b'e' | b'E'));
            if byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'.' || signed_exponent {
                self.bump();
            } else {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(source: &str, expected: &str) {
        let guarded = guard_iteration(source).expect("the pass accepts the source");
        assert_eq!(guarded, expected);
    }

    #[track_caller]
    fn refused(source: &str, line: u32) {
        let refusal = guard_iteration(source).expect_err("the pass refuses the source");
        assert_eq!(refusal.line, line, "{refusal:?}");
    }

    #[test]
    fn generic_heads_are_wrapped() {
        check(
            "for k, v in t do end",
            "for k, v in __strata_iterate(t) do end",
        );
        check(
            "for k, v in pairs(t) do end",
            "for k, v in __strata_iterate(pairs(t)) do end",
        );
        check(
            "for i, v in ipairs({ 1, 2 }), x do end",
            "for i, v in __strata_iterate(ipairs({ 1, 2 }), x) do end",
        );
        check(
            "for a in f((function() while x do end end)()) do end",
            "for a in __strata_iterate(f((function() while x do end end)())) do end",
        );
    }

    #[test]
    fn nested_loops_and_loops_in_function_bodies_are_wrapped() {
        check(
            "local function f() for k in t do for j in u do end end end",
            "local function f() for k in __strata_iterate(t) do for j in __strata_iterate(u) do end end end",
        );
        check(
            "local s = `{(function() for k in t do end end)()}`",
            "local s = `{(function() for k in __strata_iterate(t) do end end)()}`",
        );
        check(
            "for k in `{1}` do end",
            "for k in __strata_iterate(`{1}`) do end",
        );
    }

    #[test]
    fn numeric_loops_strings_and_comments_are_left_alone() {
        for source in [
            "for i = 1, 10 do end",
            "for i: number = 1, #t do end",
            "local s = 'for k in t do'",
            "local s = \"for k in t do\"",
            "local s = [[for k in t do]]",
            "local s = [==[for k in t do]] still]==]",
            "-- for k in t do",
            "--[[ for k in t do ]]",
            "local s = `for k in t do`",
            "local x = 1e+5 local y = 0x1f local z = .5",
            "local t = { form = 1, inside = 2, done = 3 }",
        ] {
            check(source, source);
        }
    }

    #[test]
    fn line_numbers_are_kept() {
        let source = "local t = {}\n--[[\n]]\nfor k in t do\nend\n";
        let guarded = guard_iteration(source).expect("accepted");
        assert_eq!(guarded.lines().count(), source.lines().count());
        assert_eq!(
            guarded.lines().nth(3),
            Some("for k in __strata_iterate(t) do")
        );
    }

    #[test]
    fn the_reserved_name_and_bare_function_heads_are_refused() {
        refused("local x = 1\nlocal __strata_iterate = 2", 2);
        refused("\n\nfor k in function() end do end", 3);
    }

    #[test]
    fn unfinished_sources_are_left_to_the_compiler() {
        for source in ["for k in t", "for k in", "for", "local s = 'open", "`{"] {
            check(source, source);
        }
    }
}
