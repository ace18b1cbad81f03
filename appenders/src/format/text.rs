//! `TextFormat`: a record as one laid-out, escaped line of text, with the
//! level coloured when the destination shows colour.

use crate::appender::AppendError;
use crate::layout::Layout;
use crate::record::{Level, Record};

use super::{Format, Style};

/// A [`Layout`]'s rendering of a record (escaping is the layout's).
#[derive(Debug)]
pub(crate) struct TextFormat {
    layout: Layout,
}

impl TextFormat {
    pub(crate) fn new(layout: Layout) -> TextFormat {
        TextFormat { layout }
    }
}

/// The SGR sequence the console appender colours `level` with (red, yellow,
/// green, blue, magenta), for tools that colour as it does (`logbus tail`).
///
/// ```
/// use logbus_appenders::{level_color, Level};
///
/// assert_eq!(level_color(Level::Error), "\x1b[31m");
/// ```
#[must_use]
pub fn level_color(level: Level) -> &'static str {
    match level {
        Level::Error => "\x1b[31m",
        Level::Warn => "\x1b[33m",
        Level::Info => "\x1b[32m",
        Level::Debug => "\x1b[34m",
        Level::Trace => "\x1b[35m",
    }
}

impl Format for TextFormat {
    fn render(
        &mut self,
        record: &Record,
        style: Style,
        out: &mut Vec<u8>,
    ) -> Result<(), AppendError> {
        let color = style.color.then(|| level_color(record.level()));
        self.layout.render_styled(record, out, color);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Topic;

    #[test]
    fn the_level_is_coloured_only_when_the_destination_shows_colour() {
        let mut format = TextFormat::new(Layout::parse("{level} {msg}").unwrap());
        let record = Record::builder(Topic::new(Level::Warn, "app"))
            .message("m\n")
            .build();
        let mut out = Vec::new();
        format.render(&record, Style::default(), &mut out).unwrap();
        assert_eq!(out, b"WARN m\\n");
        out.clear();
        format
            .render(&record, Style { color: true }, &mut out)
            .unwrap();
        assert_eq!(out, b"\x1b[33mWARN\x1b[0m m\\n");
    }
}
