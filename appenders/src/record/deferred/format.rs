//! The format language of a deferred message (`deferred.rs`).
//!
//! The format string is read at compile time, in the `const`s of the
//! macro's expansion, by one parser: `plan` says whether this module
//! reproduces the format exactly (otherwise the macro takes the `log`
//! crate's path), [`parse`] cuts it into [`Piece`]s (text, then a
//! placeholder with its spec and its argument's index), and a [`Template`]
//! holds both. Formatting a message walks the pieces; nothing is parsed at
//! run time. What the parser accepts is a subset of `format_args!`'s
//! language, chosen so that nothing is re-implemented:
//!
//! - text, `{{` and `}}`;
//! - `{}` and `{N}` (no names, no inline captures);
//! - a spec with `<`, `^` or `>` (the fill a space, the default), `+`,
//!   `#`, `0`, a literal width and a literal precision (no `$`, no `*`),
//!   and the traits `Display`, `?`, `x`, `X`, `o`, `b`, `e`, `E`.
//!
//! Each placeholder is formatted by std itself, for that one argument
//! (`write.rs`): `placeholder` calls `write!` with the spec's flags in a literal format
//! string (std takes flags only from there; one arm per combination) and
//! the width and precision as arguments, on a wrapper whose `Display`
//! calls the argument's own trait implementation with the same
//! `Formatter`. So the bytes are std's. A missing width is passed as 0: std
//! pads only when the text is shorter than the width, so width 0 and no
//! width write the same bytes for every type an [`Arg`] holds (the
//! byte-identity tests in `tests/macros.rs` cover each trait and flag).
//! The `log` path of the same call site is always compiled, so the argument
//! types fit the traits: `format_args!` has checked them.

use super::{size, write, Arg};

/// What `plan` found in a format string: whether it can be deferred, and
/// a bound on the formatted length. Macro plumbing.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    deferrable: bool,
    /// The text's bytes plus, per placeholder, `MAX_ARG_LEN` (plus the
    /// precision) or the width, whichever is larger.
    max_len: usize,
    /// How many placeholders: a string argument may be used by each.
    placeholders: usize,
}

/// The longest text std writes for a value an [`Arg`] holds (a string
/// aside), without width or precision: 327 bytes for an `f64`'s `{}`
/// (`-0.000…5`, the smallest subnormal: 324 decimals), 310 for `f64::MIN`,
/// 130 for `{:#b}` of a `u128`; a precision adds at most its digits.
const MAX_ARG_LEN: usize = 400;

/// The widest width or precision accepted: rustc refuses larger literal
/// ones (1.87 and later), std's formatter holds them in a `u16`.
const MAX_COUNT: usize = u16::MAX as usize;

impl Plan {
    const NONE: Plan = Plan {
        deferrable: false,
        max_len: 0,
        placeholders: 0,
    };

    /// Whether the call site's format can be deferred.
    #[must_use]
    #[inline]
    pub const fn deferrable(&self) -> bool {
        self.deferrable
    }

    /// Whether the message of `args` is sure to fit in `max` bytes, so
    /// that formatting it later is what the `log` path's size bound would
    /// keep (nothing cut). A string literal counts as written by `{:?}` at
    /// each placeholder (at most 6 bytes per byte, `\u{7f}`, and quotes). A
    /// `char` counts 3 bytes more at each placeholder: std pads to a width
    /// in chars, so a 4-byte char at width N is N + 3 bytes.
    #[must_use]
    #[inline]
    pub fn fits(&self, args: &[Arg], max: usize) -> bool {
        let mut len = self.max_len;
        for arg in args {
            let extra = match arg {
                Arg::Str(text) => text.len().saturating_mul(6).saturating_add(2),
                Arg::Char(_) => 3,
                _ => continue,
            };
            len = len.saturating_add(extra.saturating_mul(self.placeholders));
        }
        len <= max
    }
}

/// A call site's format string, read at compile time: what `plan` found,
/// and the [`Piece`]s of [`parse`]. A `const` of the macro's expansion, so
/// a deferred record holds a `&'static Template`. Macro plumbing.
#[doc(hidden)]
#[derive(Debug)]
pub struct Template {
    format: &'static str,
    pieces: &'static [Piece],
    plan: Plan,
}

impl Template {
    /// The template of `format` with `args` positional arguments, cut into
    /// `pieces` (`parse(format)`).
    #[must_use]
    pub const fn new(format: &'static str, pieces: &'static [Piece], args: usize) -> Template {
        Template {
            format,
            pieces,
            plan: plan(format, args),
        }
    }

    /// What `plan` found.
    #[must_use]
    #[inline]
    pub const fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The format string.
    #[must_use]
    #[inline]
    pub const fn format(&self) -> &'static str {
        self.format
    }

    /// The longest the message of `args` can be: its text, and the most
    /// each placeholder can write for its argument (`size.rs`).
    pub(crate) fn longest(&self, args: &[Arg]) -> usize {
        let mut len = 0usize;
        for piece in self.pieces {
            len = len.saturating_add(piece.text.len());
            if let Some(spec) = &piece.spec {
                if let Some(arg) = args.get(usize::from(spec.index)) {
                    len = len.saturating_add(size::placeholder(spec, arg));
                }
            }
        }
        len
    }
}

/// One piece of a message: text (part of the format string), then a
/// placeholder, if any. Macro plumbing.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct Piece {
    text: &'static str,
    spec: Option<Spec>,
}

impl Piece {
    const EMPTY: Piece = Piece {
        text: "",
        spec: None,
    };

    /// `format[start..end]` (at braces or the ends: char boundaries), then
    /// the placeholder `spec`.
    const fn new(format: &'static str, start: usize, end: usize, spec: Option<Spec>) -> Piece {
        let (head, _) = format.as_bytes().split_at(end);
        let (_, text) = head.split_at(start);
        let text = match std::str::from_utf8(text) {
            Ok(text) => text,
            Err(_) => "",
        };
        Piece { text, spec }
    }
}

/// How many pieces [`parse`] cuts `format` into (0 for a format outside
/// the subset): the length of the macro's `const` array.
#[must_use]
pub const fn pieces(format: &'static str) -> usize {
    parse_into::<0>(format).1
}

/// The pieces of `format`; `N` is [`pieces`]`(format)`.
#[must_use]
pub const fn parse<const N: usize>(format: &'static str) -> [Piece; N] {
    parse_into::<N>(format).0
}

/// The first `N` pieces of `format` and how many there are in all. Text
/// runs until a placeholder, or until an escaped brace (`{{` is the text
/// `{`: the piece ends after the first brace, the next text starts after
/// the second).
pub(super) const fn parse_into<const N: usize>(format: &'static str) -> ([Piece; N], usize) {
    let fmt = format.as_bytes();
    let mut pieces = [Piece::EMPTY; N];
    let (mut count, mut at, mut implicit) = (0, 0, 0);
    // The text of the piece being made.
    let (mut start, mut end) = (0, 0);
    loop {
        let piece = match step(fmt, at) {
            Step::Unsupported => return ([Piece::EMPTY; N], 0),
            Step::End if start == end => break,
            Step::End => {
                let piece = Piece::new(format, start, end, None);
                start = end;
                piece
            }
            Step::Text {
                start: from,
                end: to,
                next,
            } => {
                at = next;
                if from == end {
                    end = to;
                    continue;
                }
                // After an escaped brace: the text so far is a piece.
                let piece = Piece::new(format, start, end, None);
                (start, end) = (from, to);
                piece
            }
            Step::Placeholder {
                mut spec,
                explicit,
                next,
            } => {
                let index = match explicit {
                    Some(index) => index,
                    None => {
                        implicit += 1;
                        implicit - 1
                    }
                };
                if index > MAX_COUNT {
                    return ([Piece::EMPTY; N], 0);
                }
                spec.index = index as u16;
                let piece = Piece::new(format, start, end, Some(spec));
                (start, end, at) = (next, next, next);
                piece
            }
        };
        if count < N {
            pieces[count] = piece;
        }
        count += 1;
    }
    (pieces, count)
}

/// Whether `format`, given `args` positional arguments, can be deferred,
/// and how long the message can get. Evaluated at compile time by the
/// macros (`const`); anything outside the subset in the module docs, or a
/// placeholder naming a missing argument (which `format_args!` refuses),
/// is not deferrable.
#[must_use]
const fn plan(format: &str, args: usize) -> Plan {
    let fmt = format.as_bytes();
    let (mut at, mut implicit, mut len, mut placeholders) = (0, 0, 0usize, 0);
    loop {
        match step(fmt, at) {
            Step::End => break,
            Step::Unsupported => return Plan::NONE,
            Step::Text { start, end, next } => {
                len = len.saturating_add(end - start);
                at = next;
            }
            Step::Placeholder {
                spec,
                explicit,
                next,
            } => {
                let index = match explicit {
                    Some(index) => index,
                    None => {
                        implicit += 1;
                        implicit - 1
                    }
                };
                if index >= args {
                    return Plan::NONE;
                }
                let precision = match spec.precision {
                    Some(precision) => precision as usize,
                    None => 0,
                };
                let most = MAX_ARG_LEN.saturating_add(precision);
                let width = spec.width as usize;
                let most = if width > most { width } else { most };
                len = len.saturating_add(most);
                placeholders += 1;
                at = next;
            }
        }
    }
    if placeholders == 0 {
        return Plan::NONE;
    }
    Plan {
        deferrable: true,
        max_len: len,
        placeholders,
    }
}

/// Formats `template` with `args` into `out`: the pieces in order.
pub(super) fn render(template: &Template, args: &[Arg], out: &mut String) {
    for piece in template.pieces {
        out.push_str(piece.text);
        if let Some(spec) = &piece.spec {
            if let Some(arg) = args.get(usize::from(spec.index)) {
                // Writing into a `String` fails only if a trait
                // implementation does; std's for these types do not.
                let _ = write::placeholder(out, spec, arg);
            }
        }
    }
}

/// The formatting trait a placeholder names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Trait {
    Display,
    Debug,
    LowerHex,
    UpperHex,
    Octal,
    Binary,
    LowerExp,
    UpperExp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Align {
    None,
    Left,
    Center,
    Right,
}

/// One placeholder's spec (the fill is always the default space).
#[derive(Debug, Clone, Copy)]
pub(super) struct Spec {
    /// The argument's position, implicit ones counted.
    pub(super) index: u16,
    /// No alignment, flag, width or precision (`{}`, `{:?}` ...).
    pub(super) plain: bool,
    pub(super) align: Align,
    pub(super) plus: bool,
    pub(super) alternate: bool,
    pub(super) zero: bool,
    /// 0 when absent (see the module docs).
    pub(super) width: u16,
    pub(super) precision: Option<u16>,
    pub(super) trait_: Trait,
}

/// One step through a format string.
enum Step {
    /// Text `start..end`, then go on at `next` (an escaped brace is one
    /// byte of text).
    Text {
        start: usize,
        end: usize,
        next: usize,
    },
    /// A placeholder, and the position it names, if it names one.
    Placeholder {
        spec: Spec,
        explicit: Option<usize>,
        next: usize,
    },
    End,
    /// Outside the subset (or not a valid format string).
    Unsupported,
}

/// The step of `fmt` starting at byte `at`.
const fn step(fmt: &[u8], at: usize) -> Step {
    if at >= fmt.len() {
        return Step::End;
    }
    let doubled = at + 1 < fmt.len() && fmt[at + 1] == fmt[at];
    match fmt[at] {
        b'{' | b'}' if doubled => Step::Text {
            start: at,
            end: at + 1,
            next: at + 2,
        },
        b'{' => placeholder_spec(fmt, at + 1),
        b'}' => Step::Unsupported,
        _ => {
            let mut end = at;
            while end < fmt.len() && fmt[end] != b'{' && fmt[end] != b'}' {
                end += 1;
            }
            Step::Text {
                start: at,
                end,
                next: end,
            }
        }
    }
}

/// Whether `fmt[at]` exists and is `byte`.
const fn is(fmt: &[u8], at: usize, byte: u8) -> bool {
    at < fmt.len() && fmt[at] == byte
}

const fn is_digit(fmt: &[u8], at: usize) -> bool {
    at < fmt.len() && fmt[at].is_ascii_digit()
}

const fn align_of(fmt: &[u8], at: usize) -> Align {
    if at >= fmt.len() {
        return Align::None;
    }
    match fmt[at] {
        b'<' => Align::Left,
        b'^' => Align::Center,
        b'>' => Align::Right,
        _ => Align::None,
    }
}

/// The decimal number at `at` (at least one digit there) and the index
/// after it; a number above [`MAX_COUNT`] reads as `usize::MAX`.
const fn number(fmt: &[u8], mut at: usize) -> (usize, usize) {
    let mut value = 0usize;
    while is_digit(fmt, at) {
        if value <= MAX_COUNT {
            value = value * 10 + (fmt[at] - b'0') as usize;
        }
        at += 1;
    }
    if value > MAX_COUNT {
        value = usize::MAX;
    }
    (value, at)
}

/// A placeholder whose `{` is just before `at`:
/// `[index][:[[fill]align][+][#][0][width][.precision][trait]]}`.
const fn placeholder_spec(fmt: &[u8], mut at: usize) -> Step {
    let mut explicit = None;
    let mut spec = Spec {
        index: 0,
        plain: false,
        align: Align::None,
        plus: false,
        alternate: false,
        zero: false,
        width: 0,
        precision: None,
        trait_: Trait::Display,
    };
    if is_digit(fmt, at) {
        let (index, next) = number(fmt, at);
        explicit = Some(index);
        at = next;
    }
    if is(fmt, at, b':') {
        at += 1;
        // As rustc reads it: a character followed by an alignment is the
        // fill; only the default, a space, is supported.
        if !matches!(align_of(fmt, at + 1), Align::None) {
            if !is(fmt, at, b' ') {
                return Step::Unsupported;
            }
            spec.align = align_of(fmt, at + 1);
            at += 2;
        } else if !matches!(align_of(fmt, at), Align::None) {
            spec.align = align_of(fmt, at);
            at += 1;
        }
        if is(fmt, at, b'+') {
            spec.plus = true;
            at += 1;
        }
        if is(fmt, at, b'#') {
            spec.alternate = true;
            at += 1;
        }
        // `0$` is a width taken from argument 0, not the flag.
        if is(fmt, at, b'0') && !is(fmt, at + 1, b'$') {
            spec.zero = true;
            at += 1;
        }
        if is_digit(fmt, at) {
            let (width, next) = number(fmt, at);
            if width > MAX_COUNT || is(fmt, next, b'$') {
                return Step::Unsupported;
            }
            spec.width = width as u16;
            at = next;
        }
        if is(fmt, at, b'.') {
            if !is_digit(fmt, at + 1) {
                return Step::Unsupported;
            }
            let (precision, next) = number(fmt, at + 1);
            if precision > MAX_COUNT || is(fmt, next, b'$') {
                return Step::Unsupported;
            }
            spec.precision = Some(precision as u16);
            at = next;
        }
        if at < fmt.len() {
            let trait_ = match fmt[at] {
                b'?' => Some(Trait::Debug),
                b'x' => Some(Trait::LowerHex),
                b'X' => Some(Trait::UpperHex),
                b'o' => Some(Trait::Octal),
                b'b' => Some(Trait::Binary),
                b'e' => Some(Trait::LowerExp),
                b'E' => Some(Trait::UpperExp),
                _ => None,
            };
            if let Some(trait_) = trait_ {
                spec.trait_ = trait_;
                at += 1;
            }
        }
    }
    spec.plain = matches!(spec.align, Align::None)
        && !spec.plus
        && !spec.alternate
        && !spec.zero
        && spec.width == 0
        && spec.precision.is_none();
    if is(fmt, at, b'}') {
        Step::Placeholder {
            spec,
            explicit,
            next: at + 1,
        }
    } else {
        Step::Unsupported
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the macros build at compile time, at run time.
    fn template(format: &'static str, args: usize) -> Template {
        let (pieces, count) = parse_into::<64>(format);
        assert_eq!(count, super::pieces(format));
        let pieces: &'static [Piece; 64] = Box::leak(Box::new(pieces));
        Template::new(format, &pieces[..count.min(64)], args)
    }

    fn render(format: &'static str, args: &[Arg], out: &mut String) {
        super::render(&template(format, args.len()), args, out);
    }

    #[track_caller]
    fn check(format: &'static str, args: &[Arg], expected: Option<&str>) {
        let plan = plan(format, args.len());
        assert_eq!(plan.deferrable(), expected.is_some(), "{format:?}");
        if let Some(expected) = expected {
            let mut out = String::new();
            render(format, args, &mut out);
            assert_eq!(out, expected, "{format:?}");
            // The bound is at least the length: any less does not fit.
            assert!(!plan.fits(args, out.len() - 1), "{format:?}");
        }
    }

    #[test]
    fn the_subset_is_rendered_by_std() {
        let (n, x) = (Arg::I32(-42), Arg::F64(2.5));
        check("{}", &[n], Some("-42"));
        check("a {{}} {} b", &[n], Some("a {} -42 b"));
        check(
            "{:>6}|{:<6}|{:^6}",
            &[n, n, n],
            Some("   -42|-42   | -42  "),
        );
        check("{: >6}", &[n], Some("   -42"));
        check("{:+06.2}", &[x], Some("+02.50"));
        check(
            "{:#x} {:X} {:o} {:b}",
            &[n; 4],
            Some(&format!("{:#x} {:X} {:o} {:b}", -42, -42, -42, -42)),
        );
        check("{:e} {:E}", &[x, x], Some("2.5e0 2.5E0"));
        check("{1} {} {0} {}", &[n, x], Some("2.5 -42 -42 2.5"));
        check(
            "{:?} {:?}",
            &[Arg::Char('\n'), Arg::Str("\"")],
            Some(r#"'\n' "\"""#),
        );
        check("{:.2}", &[Arg::Str("abc")], Some("ab"));
    }

    #[test]
    fn what_is_outside_the_subset_is_not_deferrable() {
        let n = [Arg::I32(1)];
        for format in [
            "{x}",
            "{:*>5}",
            "{:-}",
            "{:1$}",
            "{:.*}",
            "{:.1$}",
            "{:x?}",
            "{:p}",
            "{ }",
            "}",
            "{",
            "{:>>5}",
            "{:0$}",
            "{:.}",
            "no placeholder",
            "{1}",
            "{:é>5}",
            "{:99999}",
        ] {
            check(format, &n, None);
        }
    }

    #[test]
    fn the_bound_holds_for_the_longest_values() {
        for (format, arg) in [
            ("{}", Arg::F64(-f64::from_bits(1))),
            ("{}", Arg::F64(f64::MIN)),
            ("{:?}", Arg::F64(f64::MIN)),
            ("{:#b}", Arg::U128(u128::MAX)),
            ("{:#b}", Arg::I128(i128::MIN)),
            ("{:e}", Arg::I128(i128::MIN)),
            ("{:.30}", Arg::F64(f64::MIN)),
            ("{:.30e}", Arg::I128(i128::MIN)),
            ("{:?}", Arg::Char('\u{10ffff}')),
            // Padded by chars: 4 bytes in one char.
            ("{:1024}", Arg::Char('\u{1f600}')),
            ("{:^1024.1}", Arg::Char('\u{1f600}')),
        ] {
            let mut out = String::new();
            render(format, &[arg], &mut out);
            assert!(
                !plan(format, 1).fits(&[arg], out.len() - 1),
                "{format} {arg:?}"
            );
        }
        // A string literal used twice, each time escaped 6 bytes a byte.
        let control = Arg::Str("\u{7f}\u{7f}");
        let mut out = String::new();
        render("{:?}{0:?}", &[control], &mut out);
        assert_eq!(out.len(), 28);
        assert!(!plan("{:?}{0:?}", 1).fits(&[control], out.len() - 1));
    }
}
