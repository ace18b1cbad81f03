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
    /// The configuration is invalid (empty path, `max_bytes(0)`, bad mode),
    /// or contradicts the appender it is for (a layout on a JSON file).
    Config,
}

impl FileError {
    pub(crate) fn io(kind: FileErrorKind, path: &Path, source: io::Error) -> FileError {
        FileError {
            kind,
            path: path.to_owned(),
            detail: None,
            source: Some(source),
        }
    }

    pub(crate) fn kind_only(kind: FileErrorKind, path: &Path) -> FileError {
        FileError {
            kind,
            path: path.to_owned(),
            detail: None,
            source: None,
        }
    }

    pub(crate) fn config(path: &Path, detail: &'static str) -> FileError {
        FileError {
            kind: FileErrorKind::Config,
            path: path.to_owned(),
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
        }
    }
}

impl StdError for FileError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source.as_ref().map(|e| e as &(dyn StdError + 'static))
    }
}
