//! `Console`: the text format × stdout and/or stderr, routed by level,
//! with colour decided per stream.

use std::io::{self, IsTerminal, Write};

use crate::destination::stream::{LevelSplit, Stream};
use crate::escape::MultilineMode;
use crate::format::TextFormat;
use crate::layout::Layout;
use crate::record::Level;
use crate::render::Pipeline;

/// Where a [`Console`] writes.
///
/// The default is stderr, as for `env_logger`, `tracing-subscriber`'s
/// `fmt` and [`logbus::init`](https://docs.rs/logbus/latest/logbus/fn.init.html):
/// diagnostics stay out of a program's output, so `app | jq` still works.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ConsoleTarget {
    /// Every record to stdout.
    Stdout,
    /// Every record to stderr (default).
    #[default]
    Stderr,
    /// `WARN` and `ERROR` to stderr, the rest to stdout.
    Split,
}

/// Whether a [`Console`] colours the level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ColorMode {
    /// Colour a stream when it is a terminal and the environment does not
    /// say otherwise (`NO_COLOR`, `CLICOLOR_FORCE`, `CLICOLOR`, `TERM`; see
    /// [`color_choice`]) (default).
    #[default]
    Auto,
    /// Always colour, whatever the stream and the environment.
    Always,
    /// Never colour.
    Never,
}

/// The [`ColorMode::Auto`] decision for a stream, as a function of whether
/// it is a terminal and of the environment, read through `var` (a variable
/// that is set but not UTF-8 counts as set). The conventions, in order of
/// precedence, are those `env_logger` follows (through `anstream`):
///
/// 1. `NO_COLOR` set and non-empty: no colour (<https://no-color.org>). An
///    explicit opt-out wins over everything else.
/// 2. `CLICOLOR_FORCE` set, non-empty and not `0`: colour, even into a pipe
///    (<https://bixense.com/clicolors/>).
/// 3. `CLICOLOR=0`: no colour.
/// 4. Not a terminal: no colour.
/// 5. `CLICOLOR` set to anything else: colour.
/// 6. `TERM=dumb`: no colour; `TERM` unset: no colour, except on Windows,
///    whose consoles do not set it.
/// 7. Otherwise colour.
///
/// Written here rather than taken from `anstream`/`anstyle-query`: the
/// rules are these seven lines, and those crates would take logbus's
/// default dependency tree past `env_logger`'s.
///
/// # Examples
///
/// ```
/// use logbus_appenders::color_choice;
///
/// let env = |vars: &'static [(&'static str, &'static str)]| {
///     move |name: &str| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string())
/// };
/// assert!(color_choice(true, env(&[("TERM", "xterm-256color")])));
/// assert!(!color_choice(false, env(&[("TERM", "xterm-256color")])));
/// assert!(!color_choice(true, env(&[("TERM", "dumb")])));
/// assert!(!color_choice(true, env(&[("TERM", "xterm"), ("NO_COLOR", "1")])));
/// assert!(!color_choice(true, env(&[("TERM", "xterm"), ("CLICOLOR", "0")])));
/// assert!(color_choice(false, env(&[("CLICOLOR_FORCE", "1")])));
/// ```
#[must_use]
pub fn color_choice(is_terminal: bool, var: impl Fn(&str) -> Option<String>) -> bool {
    let set = |name| var(name).filter(|v| !v.is_empty());
    if set("NO_COLOR").is_some() {
        return false;
    }
    if set("CLICOLOR_FORCE").is_some_and(|v| v != "0") {
        return true;
    }
    let clicolor = set("CLICOLOR");
    if clicolor.as_deref() == Some("0") || !is_terminal {
        return false;
    }
    if clicolor.is_some() {
        return true;
    }
    match var("TERM").as_deref() {
        Some("dumb") => false,
        Some(_) => true,
        None => cfg!(windows),
    }
}

/// [`color_choice`] on the process's environment.
fn env_color_choice(is_terminal: bool) -> bool {
    color_choice(is_terminal, env_var)
}

/// A variable of the process's environment; one that is set but not
/// UTF-8 still counts as set.
pub(crate) fn env_var(name: &str) -> Option<String> {
    std::env::var_os(name).map(|v| v.to_string_lossy().into_owned())
}

/// Writes each record as one laid-out line to stdout, stderr, or both.
///
/// The lines of a call are written whole, one write per stream for an
/// ordinary batch, before [`append`](crate::Appender::append) or
/// [`append_batch`](crate::Appender::append_batch) returns, so a record counted as
/// written was handed to the OS. With [`ConsoleTarget::Split`], the lines
/// rendered for one stream are written before a line goes to the other, so
/// the two streams interleave in record order on a terminal.
///
/// Control characters in messages and key-values are escaped (see
/// [`MultilineMode`]), so a message can neither forge a line nor drive the
/// terminal.
///
/// | Builder method | Default |
/// |---|---|
/// | [`target`](ConsoleBuilder::target) | [`ConsoleTarget::Stderr`] |
/// | [`color`](ConsoleBuilder::color) | [`ColorMode::Auto`] |
/// | [`layout`](ConsoleBuilder::layout) | [`Layout::default()`] |
/// | [`multiline`](ConsoleBuilder::multiline) | [`MultilineMode::Escape`] |
///
/// # Examples
///
/// ```
/// use logbus_appenders::{Appender, ColorMode, Console, ConsoleTarget, Layout, Level, Record, Topic};
///
/// let mut console = Console::builder()
///     .target(ConsoleTarget::Split)
///     .color(ColorMode::Never)
///     .layout(Layout::parse("{level:>5} {target}: {msg}{kv}")?)
///     .build();
/// console.append(&Record::builder(Topic::new(Level::Info, "app")).message("hello").build())?;
/// console.flush()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Console {
    pipeline: Pipeline<TextFormat, LevelSplit>,
}

/// Configures a [`Console`]; see [`Console::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct ConsoleBuilder {
    target: ConsoleTarget,
    color: ColorMode,
    layout: Option<Layout>,
    multiline: MultilineMode,
}

impl Console {
    /// Starts configuring a console appender (defaults in the [type docs](Console)).
    pub fn builder() -> ConsoleBuilder {
        ConsoleBuilder {
            target: ConsoleTarget::Stderr,
            color: ColorMode::Auto,
            layout: None,
            multiline: MultilineMode::Escape,
        }
    }
}

impl ConsoleBuilder {
    /// Sets where records go.
    pub fn target(mut self, target: ConsoleTarget) -> Self {
        self.target = target;
        self
    }

    /// Sets whether the level is coloured.
    pub fn color(mut self, mode: ColorMode) -> Self {
        self.color = mode;
        self
    }

    /// Sets the layout.
    pub fn layout(mut self, layout: Layout) -> Self {
        self.layout = Some(layout);
        self
    }

    /// Sets how line feeds in messages are written (overrides the layout's).
    pub fn multiline(mut self, mode: MultilineMode) -> Self {
        self.multiline = mode;
        self
    }

    fn color_for(&self, is_terminal: bool) -> bool {
        match self.color {
            ColorMode::Auto => env_color_choice(is_terminal),
            ColorMode::Always => true,
            ColorMode::Never => false,
        }
    }

    /// Builds the appender on the process's stdout and stderr.
    #[must_use]
    pub fn build(self) -> Console {
        let out_color = self.color_for(io::stdout().is_terminal());
        let err_color = self.color_for(io::stderr().is_terminal());
        self.assemble(
            (Box::new(io::stdout()), out_color),
            (Box::new(io::stderr()), err_color),
        )
    }

    /// Builds the appender on the given writers instead of stdout and
    /// stderr (for tests, or to write into a pipe you own). They count as
    /// non-terminals for [`ColorMode::Auto`].
    ///
    /// # Examples
    ///
    /// ```
    /// use logbus_appenders::{Appender, ColorMode, Console, Layout, Level, Record, Topic};
    /// use std::sync::{Arc, Mutex};
    ///
    /// #[derive(Clone, Default)]
    /// struct Shared(Arc<Mutex<Vec<u8>>>);
    /// impl std::io::Write for Shared {
    ///     fn write(&mut self, b: &[u8]) -> std::io::Result<usize> { self.0.lock().unwrap().write(b) }
    ///     fn flush(&mut self) -> std::io::Result<()> { Ok(()) }
    /// }
    ///
    /// let err = Shared::default();
    /// let mut console = Console::builder()
    ///     .layout(Layout::parse("{level} {msg}")?)
    ///     .color(ColorMode::Never)
    ///     .build_with_writers(std::io::sink(), err.clone()); // stderr by default
    /// console.append(&Record::builder(Topic::new(Level::Info, "app")).message("a\nb").build())?;
    /// console.flush()?;
    /// assert_eq!(*err.0.lock().unwrap(), b"INFO a\\nb\n");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn build_with_writers(
        self,
        stdout: impl Write + Send + 'static,
        stderr: impl Write + Send + 'static,
    ) -> Console {
        let color = self.color_for(false);
        self.assemble((Box::new(stdout), color), (Box::new(stderr), color))
    }

    fn assemble(
        self,
        stdout: (Box<dyn Write + Send>, bool),
        stderr: (Box<dyn Write + Send>, bool),
    ) -> Console {
        let layout = self.layout.unwrap_or_default().multiline(self.multiline);
        // Colour needs a level to colour; without one the stream is plain.
        let colored = layout.has_level();
        let (out, out_color) = stdout;
        let (err, err_color) = stderr;
        // The first level (most severe first) that goes to stderr.
        let stderr_from = match self.target {
            ConsoleTarget::Stdout => None,
            ConsoleTarget::Stderr => Some(Level::Trace),
            ConsoleTarget::Split => Some(Level::Warn),
        };
        let streams = LevelSplit::new(
            Stream::new("stdout", out, out_color && colored),
            Stream::new("stderr", err, err_color && colored),
            stderr_from,
        );
        Console {
            pipeline: Pipeline::new(TextFormat::new(layout), streams),
        }
    }
}

impl Default for ConsoleBuilder {
    fn default() -> Self {
        Console::builder()
    }
}

crate::render::appender_through_pipeline!(Console);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn color_decision_table() {
        /// Variables set, by name.
        type Env = &'static [(&'static str, &'static str)];
        #[rustfmt::skip]
        let table: &[(bool, Env, bool)] = &[
            // terminal, environment, colour?
            (true,  &[("TERM", "xterm")], true),
            (false, &[("TERM", "xterm")], false),
            (true,  &[], cfg!(windows)),
            (true,  &[("TERM", "dumb")], false),
            (true,  &[("TERM", "")], true),
            (true,  &[("TERM", "xterm"), ("NO_COLOR", "")], true),
            (true,  &[("TERM", "xterm"), ("NO_COLOR", "1")], false),
            (true,  &[("TERM", "xterm"), ("NO_COLOR", "0")], false),
            (false, &[("CLICOLOR_FORCE", "1")], true),
            (false, &[("CLICOLOR_FORCE", "yes")], true),
            (false, &[("CLICOLOR_FORCE", "0")], false),
            (false, &[("CLICOLOR_FORCE", "")], false),
            (true,  &[("TERM", "dumb"), ("CLICOLOR_FORCE", "1")], true),
            (true,  &[("TERM", "xterm"), ("CLICOLOR_FORCE", "0")], true),
            (false, &[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")], false),
            (true,  &[("TERM", "xterm"), ("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")], false),
            (false, &[("NO_COLOR", ""), ("CLICOLOR_FORCE", "1")], true),
            (true,  &[("TERM", "xterm"), ("CLICOLOR", "0")], false),
            (true,  &[("CLICOLOR", "0"), ("CLICOLOR_FORCE", "1")], true),
            (true,  &[("TERM", "dumb"), ("CLICOLOR", "1")], true),
            (true,  &[("CLICOLOR", "1")], true),
            (false, &[("TERM", "xterm"), ("CLICOLOR", "1")], false),
            (true,  &[("TERM", "xterm"), ("CLICOLOR", "")], true),
        ];
        for &(terminal, vars, expected) in table {
            let var = |name: &str| {
                vars.iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.to_string())
            };
            assert_eq!(
                color_choice(terminal, var),
                expected,
                "terminal={terminal} environment={vars:?}"
            );
        }
    }
}
