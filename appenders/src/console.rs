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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ConsoleTarget {
    /// Every record to stdout (default).
    #[default]
    Stdout,
    /// Every record to stderr.
    Stderr,
    /// `WARN` and `ERROR` to stderr, the rest to stdout.
    Split,
}

/// Whether a [`Console`] colours the level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ColorMode {
    /// Colour a stream when it is a terminal, honouring `NO_COLOR` and
    /// `CLICOLOR_FORCE` (see [`color_choice`]) (default).
    #[default]
    Auto,
    /// Always colour, whatever the stream and the environment.
    Always,
    /// Never colour.
    Never,
}

/// The [`ColorMode::Auto`] decision, as a pure function of its inputs.
///
/// - `NO_COLOR` set to a non-empty value disables colour
///   (<https://no-color.org>); it wins over `CLICOLOR_FORCE`, because an
///   explicit opt-out should not be overridden by a blanket setting.
/// - otherwise `CLICOLOR_FORCE` set to a non-empty value other than `0`
///   forces colour, even into a pipe;
/// - otherwise colour only when the stream is a terminal.
///
/// # Examples
///
/// ```
/// use logbus_appenders::color_choice;
///
/// assert!(color_choice(true, None, None));
/// assert!(!color_choice(false, None, None));
/// assert!(!color_choice(true, Some("1"), None));
/// assert!(color_choice(false, None, Some("1")));
/// assert!(!color_choice(false, None, Some("0")));
/// ```
#[must_use]
pub fn color_choice(
    is_terminal: bool,
    no_color: Option<&str>,
    clicolor_force: Option<&str>,
) -> bool {
    if no_color.is_some_and(|v| !v.is_empty()) {
        return false;
    }
    if clicolor_force.is_some_and(|v| !v.is_empty() && v != "0") {
        return true;
    }
    is_terminal
}

fn env_color_choice(is_terminal: bool) -> bool {
    let no_color = std::env::var_os("NO_COLOR");
    let force = std::env::var_os("CLICOLOR_FORCE");
    color_choice(
        is_terminal,
        no_color.as_deref().map(|v| v.to_str().unwrap_or("?")),
        force.as_deref().map(|v| v.to_str().unwrap_or("?")),
    )
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
/// | [`target`](ConsoleBuilder::target) | [`ConsoleTarget::Stdout`] |
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
            target: ConsoleTarget::Stdout,
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
    /// let out = Shared::default();
    /// let mut console = Console::builder()
    ///     .layout(Layout::parse("{level} {msg}")?)
    ///     .color(ColorMode::Never)
    ///     .build_with_writers(out.clone(), std::io::sink());
    /// console.append(&Record::builder(Topic::new(Level::Info, "app")).message("a\nb").build())?;
    /// console.flush()?;
    /// assert_eq!(*out.0.lock().unwrap(), b"INFO a\\nb\n");
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
        #[rustfmt::skip]
        let table: &[(bool, Option<&str>, Option<&str>, bool)] = &[
            // terminal, NO_COLOR, CLICOLOR_FORCE, colour?
            (true,  None,      None,      true),
            (false, None,      None,      false),
            (true,  Some(""),  None,      true),
            (true,  Some("1"), None,      false),
            (true,  Some("0"), None,      false),
            (false, None,      Some("1"), true),
            (false, None,      Some("yes"), true),
            (false, None,      Some("0"), false),
            (false, None,      Some(""),  false),
            (true,  None,      Some("0"), true),
            (false, Some("1"), Some("1"), false),
            (true,  Some("1"), Some("1"), false),
            (false, Some(""),  Some("1"), true),
        ];
        for &(terminal, no_color, force, expected) in table {
            assert_eq!(
                color_choice(terminal, no_color, force),
                expected,
                "terminal={terminal} NO_COLOR={no_color:?} CLICOLOR_FORCE={force:?}"
            );
        }
    }
}
