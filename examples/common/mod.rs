//! Pieces shared by the examples: a healthy stand-in appender and command-line
//! flags. Included with `#[path = "common/mod.rs"] mod common;` (cargo does not
//! build this file as an example of its own).

#![allow(dead_code, unreachable_pub)]

use std::io::Write as _;
use std::str::FromStr;

use logbus::{AppendError, Appender, Record};

/// Formats each record into a reused buffer and discards it: a stand-in for
/// a fast file appender.
#[derive(Debug, Default)]
pub struct Healthy {
    line: Vec<u8>,
}

impl Appender for Healthy {
    fn append(&mut self, record: &Record) -> Result<(), AppendError> {
        self.line.clear();
        let _ = writeln!(
            self.line,
            "{} {} {}",
            record.level(),
            record.target(),
            record.message()
        );
        std::hint::black_box(&self.line);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        Ok(())
    }
}

/// The value of the flag `name` (`--name value`), parsed; `None` when the
/// flag is absent, an error when it has no value or the value does not parse.
pub fn flag<T: FromStr>(args: &[String], name: &str) -> Result<Option<T>, String>
where
    T::Err: std::fmt::Display,
{
    let Some(i) = args.iter().position(|a| a == name) else {
        return Ok(None);
    };
    args.get(i + 1)
        .ok_or_else(|| format!("{name} needs a value"))?
        .parse()
        .map(Some)
        .map_err(|e| format!("{name}: {e}"))
}

/// [`flag`], required.
pub fn required<T: FromStr>(args: &[String], name: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    flag(args, name)?.ok_or_else(|| format!("missing {name}"))
}

/// [`flag`], or `default` when absent.
pub fn or_default<T: FromStr>(args: &[String], name: &str, default: T) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    Ok(flag(args, name)?.unwrap_or(default))
}
