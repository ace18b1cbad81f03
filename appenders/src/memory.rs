//! `Memory`: an appender that captures records, for tests and examples.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::appender::{AppendError, Appender, BatchError};
use crate::record::Record;

/// Captures every record it is given; read them through a [`MemoryHandle`].
///
/// # Examples
///
/// ```
/// use logbus_appenders::{Appender, Level, Memory, Record, Topic};
///
/// let (mut appender, handle) = Memory::new();
/// appender.append(&Record::builder(Topic::new(Level::Info, "app")).message("hi").build())?;
/// appender.flush()?;
/// assert_eq!(handle.messages(), vec!["hi".to_string()]);
/// assert_eq!(handle.flushes(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Memory {
    shared: Arc<Mutex<Captured>>,
}

/// Reads what a [`Memory`] appender captured, from any thread.
#[derive(Debug, Clone)]
pub struct MemoryHandle {
    shared: Arc<Mutex<Captured>>,
}

#[derive(Debug, Default)]
struct Captured {
    records: Vec<Arc<Record>>,
    flushes: u64,
}

impl Memory {
    /// A new, empty appender and the handle to read it.
    #[must_use]
    pub fn new() -> (Memory, MemoryHandle) {
        let shared = Arc::new(Mutex::new(Captured::default()));
        (
            Memory {
                shared: Arc::clone(&shared),
            },
            MemoryHandle { shared },
        )
    }

    fn lock(&self) -> MutexGuard<'_, Captured> {
        // A panic while holding this lock can only come from a push; the data
        // is still consistent, so poisoning is ignored.
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Appender for Memory {
    fn append(&mut self, record: &Record) -> Result<(), AppendError> {
        self.lock().records.push(Arc::new(record.clone()));
        Ok(())
    }

    fn append_batch(&mut self, records: &[Arc<Record>]) -> Result<(), BatchError> {
        self.lock().records.extend(records.iter().cloned());
        Ok(())
    }

    fn flush(&mut self) -> Result<(), AppendError> {
        self.lock().flushes += 1;
        Ok(())
    }
}

impl MemoryHandle {
    fn lock(&self) -> MutexGuard<'_, Captured> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The records captured so far, in the order they were appended.
    #[must_use]
    pub fn records(&self) -> Vec<Arc<Record>> {
        self.lock().records.clone()
    }

    /// The messages captured so far.
    #[must_use]
    pub fn messages(&self) -> Vec<String> {
        self.lock()
            .records
            .iter()
            .map(|r| r.message().to_owned())
            .collect()
    }

    /// The sequence numbers captured so far.
    #[must_use]
    pub fn seqs(&self) -> Vec<u64> {
        self.lock().records.iter().map(|r| r.seq()).collect()
    }

    /// How many records were captured.
    #[must_use]
    pub fn len(&self) -> usize {
        self.lock().records.len()
    }

    /// Whether nothing was captured.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many times the appender was flushed.
    #[must_use]
    pub fn flushes(&self) -> u64 {
        self.lock().flushes
    }

    /// Removes and returns everything captured.
    #[must_use]
    pub fn take(&self) -> Vec<Arc<Record>> {
        std::mem::take(&mut self.lock().records)
    }
}
