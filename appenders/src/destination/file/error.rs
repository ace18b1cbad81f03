//! `FileError`: why a file destination (for a file or JSON appender) could
//! not be built.

use std::error::Error as StdError;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Why a file appender could not be built.
#[derive(Debug)]
pub struct FileError {
    kind: FileErrorKind,
    path: PathBuf,
    /// The file the error is about, when not the log file itself (a
    /// rotated file retention could not remove).
    file: Option<PathBuf>,
    detail: Option<&'static str>,
    source: Option<io::Error>,
}

/// What went wrong building a file appender.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FileErrorKind {
    /// The directory of the log file could not be created.
    CreateDir,
    /// The log file could not be opened or created.
    Open,
    /// The log path is a symlink, which is refused rather than followed.
    Symlink,
    /// The log file has other hard links (`st_nlink > 1`): records would
    /// also land in a file planted elsewhere, so it is refused.
    Hardlink,
    /// The configuration is invalid (empty path, `max_bytes(0)`, bad mode,
    /// a zero retention limit, an offset of a day or more), contradicts
    /// itself (dated names without a time rotation, `keep(0)` with another
    /// retention limit), or contradicts the appender it is for (a layout on
    /// a JSON file). The message names the setting.
    Config,
    /// Applying the retention limits when opening failed: the directory
    /// could not be listed, or a rotated file past the limits could not be
    /// removed (the message names it).
    Retention,
}

impl FileError {
    pub(crate) fn io(kind: FileErrorKind, path: &Path, source: io::Error) -> FileError {
        FileError {
            kind,
            path: path.to_owned(),
            file: None,
            detail: None,
            source: Some(source),
        }
    }

    /// The error is about `file`, beside the log file.
    pub(crate) fn with_file(mut self, file: PathBuf) -> FileError {
        if file != self.path {
            self.file = Some(file);
        }
        self
    }

    pub(crate) fn kind_only(kind: FileErrorKind, path: &Path) -> FileError {
        FileError {
            kind,
            path: path.to_owned(),
            file: None,
            detail: None,
            source: None,
        }
    }

    pub(crate) fn config(path: &Path, detail: &'static str) -> FileError {
        FileError {
            kind: FileErrorKind::Config,
            path: path.to_owned(),
            file: None,
            detail: Some(detail),
            source: None,
        }
    }

    /// What went wrong.
    #[must_use]
    pub fn kind(&self) -> FileErrorKind {
        self.kind
    }

    /// The log path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The I/O error kind, when the cause is an I/O error.
    #[must_use]
    pub fn io_kind(&self) -> Option<io::ErrorKind> {
        self.source.as_ref().map(io::Error::kind)
    }
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        match self.kind {
            FileErrorKind::CreateDir => write!(f, "cannot create the directory of {path}"),
            FileErrorKind::Open => write!(f, "cannot open {path}"),
            FileErrorKind::Symlink => write!(f, "refusing to follow the symlink at {path}"),
            FileErrorKind::Hardlink => {
                write!(f, "refusing to write to {path}: it has other hard links")
            }
            FileErrorKind::Config => write!(
                f,
                "invalid file appender configuration for {path}: {}",
                self.detail.unwrap_or("invalid")
            ),
            FileErrorKind::Retention => match &self.file {
                Some(file) => write!(
                    f,
                    "cannot remove {}, a rotated file of {path} past the retention limits",
                    file.display()
                ),
                None => write!(f, "cannot list the rotated files of {path}"),
            },
        }
    }
}

impl StdError for FileError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source.as_ref().map(|e| e as &(dyn StdError + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retention_error_names_the_file_it_could_not_remove() {
        let log = Path::new("/logs/app.log");
        let denied = || io::Error::from(io::ErrorKind::PermissionDenied);
        let err = FileError::io(FileErrorKind::Retention, log, denied())
            .with_file(PathBuf::from("/logs/app.log.2026-12-01"));
        assert_eq!(
            err.to_string(),
            "cannot remove /logs/app.log.2026-12-01, a rotated file of /logs/app.log past the \
             retention limits"
        );
        assert_eq!(err.io_kind(), Some(io::ErrorKind::PermissionDenied));
        assert_eq!(err.path(), log);
        // The directory itself could not be listed.
        let err = FileError::io(FileErrorKind::Retention, log, denied()).with_file(log.to_owned());
        assert_eq!(
            err.to_string(),
            "cannot list the rotated files of /logs/app.log"
        );
    }
}
