//! A record's key-values, and past them the strings of the key-values a
//! reused record carried before, for its next ones.

use std::borrow::Cow;

use super::Value;

/// One key-value.
pub(crate) type Pair = (Cow<'static, str>, Value);

/// A record's key-values, `pairs[..len]`. The pairs past `len` are what a
/// reused record carried before ([`clear`](KeyValues::clear) keeps them):
/// their owned strings, keys and text values, are taken for the next
/// key-values ([`take_text`](KeyValues::take_text)), so a warm log call
/// with key-values allocates nothing.
#[derive(Default)]
pub(crate) struct KeyValues {
    pairs: Vec<Pair>,
    len: usize,
}

impl KeyValues {
    /// `pairs`, all of them key-values.
    pub(crate) fn from_vec(pairs: Vec<Pair>) -> KeyValues {
        let len = pairs.len();
        KeyValues { pairs, len }
    }

    #[inline]
    pub(crate) fn as_slice(&self) -> &[Pair] {
        &self.pairs[..self.len]
    }

    /// Whether there are none (without the slice's bounds check).
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub(crate) fn as_mut_slice(&mut self) -> &mut [Pair] {
        &mut self.pairs[..self.len]
    }

    /// Appends `pair`, over the next spare pair if there is one (what is
    /// left of its strings goes).
    #[inline]
    pub(crate) fn push(&mut self, pair: Pair) {
        match self.pairs.get_mut(self.len) {
            Some(spare) => *spare = pair,
            None => self.pairs.push(pair),
        }
        self.len += 1;
    }

    /// Forgets the key-values, keeping their pairs as spares, each owned
    /// string of at most `max_text` bytes of capacity (a larger one goes);
    /// a vector of more than `max_pairs` pairs goes whole.
    #[inline]
    pub(crate) fn clear(&mut self, max_pairs: usize, max_text: usize) {
        // Most records have no key-values: nothing to do.
        if self.len != 0 || self.pairs.capacity() > max_pairs {
            self.clear_some(max_pairs, max_text);
        }
    }

    #[cold]
    #[inline(never)]
    fn clear_some(&mut self, max_pairs: usize, max_text: usize) {
        if self.pairs.capacity() > max_pairs {
            *self = KeyValues::default();
            return;
        }
        let too_long =
            |text: &Cow<'static, str>| matches!(text, Cow::Owned(t) if t.capacity() > max_text);
        for (key, value) in &mut self.pairs[..self.len] {
            if too_long(key) {
                *key = Cow::Borrowed("");
            }
            if matches!(value, Value::Str(text) if too_long(text)) {
                *value = Value::Null;
            }
        }
        self.len = 0;
    }

    /// Lets go of the spare pairs (a record to be retained holds only what
    /// it shows), and of the vector's capacity if more than `slack` pairs
    /// of it are unused.
    pub(crate) fn fit(&mut self, slack: usize) {
        self.pairs.truncate(self.len);
        if self.pairs.capacity() > self.len + slack {
            self.pairs = self.as_slice().to_vec();
        }
    }

    /// An empty string for a key or a text value: the first spare pair's
    /// owned string with room (no allocation while it has enough), or a new
    /// one.
    pub(crate) fn take_text(&mut self) -> String {
        take_text(&mut self.pairs[self.len..])
    }

    /// Appends `key` and `value`, or `text` as a text value, copied into
    /// the next spare pair's strings where it has them (a call site logs
    /// the same kinds each time), else into strings the other spares give
    /// ([`take_text`](KeyValues::take_text)).
    pub(crate) fn push_copied(&mut self, key: &str, value: Value, text: Option<&str>) {
        let Some((pair, others)) = self
            .pairs
            .get_mut(self.len..)
            .and_then(<[Pair]>::split_first_mut)
        else {
            let copy = |text: &str| Cow::Owned(text.to_owned());
            let value = text.map_or(value, |text| Value::Str(copy(text)));
            return self.push((copy(key), value));
        };
        copy_into(&mut pair.0, key, others);
        match text {
            Some(text) => match &mut pair.1 {
                Value::Str(spare) => copy_into(spare, text, others),
                spare => *spare = Value::Str(copied(take_text(others), text)),
            },
            None => pair.1 = value,
        }
        self.len += 1;
    }

    /// The vector's capacity, in pairs.
    pub(crate) fn capacity(&self) -> usize {
        self.pairs.capacity()
    }

    /// Every pair, the spare ones too (what the record holds).
    pub(crate) fn held(&self) -> &[Pair] {
        &self.pairs
    }
}

/// An empty string taken from `spares`' owned strings (the first with
/// room), or a new one.
fn take_text(spares: &mut [Pair]) -> String {
    for (key, value) in spares {
        let text = if let Value::Str(text) = value {
            Some(text)
        } else {
            None
        };
        for text in [Some(key), text].into_iter().flatten() {
            if let Cow::Owned(owned) = text {
                if owned.capacity() > 0 {
                    let mut owned = std::mem::take(owned);
                    owned.clear();
                    return owned;
                }
            }
        }
    }
    String::new()
}

/// `owned` emptied, then holding `text`.
fn copied(mut owned: String, text: &str) -> Cow<'static, str> {
    owned.clear();
    owned.push_str(text);
    Cow::Owned(owned)
}

/// Copies `text` into `spare`'s own string if it has one with room, else
/// into one `others` give.
fn copy_into(spare: &mut Cow<'static, str>, text: &str, others: &mut [Pair]) {
    match spare {
        Cow::Owned(owned) if owned.capacity() > 0 => {
            owned.clear();
            owned.push_str(text);
        }
        _ => *spare = copied(take_text(others), text),
    }
}

impl Clone for KeyValues {
    /// The key-values, without the spares.
    fn clone(&self) -> KeyValues {
        KeyValues::from_vec(self.as_slice().to_vec())
    }
}

impl Extend<Pair> for KeyValues {
    fn extend<I: IntoIterator<Item = Pair>>(&mut self, pairs: I) {
        for pair in pairs {
            self.push(pair);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(text: &str) -> Cow<'static, str> {
        Cow::Owned(text.to_owned())
    }

    #[test]
    fn cleared_key_values_give_their_strings_to_the_next_ones() {
        let mut kv = KeyValues::default();
        kv.push((owned("id"), Value::U64(7)));
        kv.push((owned("user"), Value::Str(owned("alice"))));
        kv.push((Cow::Borrowed("static"), Value::Str(Cow::Borrowed("text"))));
        let places: Vec<*const u8> = ["id", "user", "alice"]
            .iter()
            .map(|t| {
                kv.as_slice()
                    .iter()
                    .flat_map(|(k, v)| {
                        [Some(k), if let Value::Str(s) = v { Some(s) } else { None }]
                    })
                    .flatten()
                    .find(|s| s == t)
                    .unwrap()
                    .as_ptr()
            })
            .collect();
        kv.clear(64, 256);
        assert!(kv.as_slice().is_empty());
        // In order: the first spare pair's key, then its text value, ...
        let taken: Vec<String> = (0..4).map(|_| kv.take_text()).collect();
        assert!(taken.iter().all(String::is_empty));
        assert_eq!(taken[0].as_ptr(), places[0]);
        assert_eq!(taken[1].as_ptr(), places[1]);
        assert_eq!(taken[2].as_ptr(), places[2]);
        assert_eq!(
            taken[3].capacity(),
            0,
            "borrowed texts give nothing: a new string"
        );
        kv.push((Cow::Borrowed("k"), Value::Bool(true)));
        assert_eq!(kv.as_slice().len(), 1);
        assert_eq!(kv.held().len(), 3, "the spares past it stay");
        kv.fit(4);
        assert_eq!(kv.held().len(), 1);
        let clone = kv.clone();
        assert_eq!(clone.as_slice(), kv.as_slice());
    }

    #[test]
    fn a_clear_lets_go_of_long_strings_and_large_vectors() {
        let mut kv = KeyValues::default();
        kv.push((
            Cow::Owned("k".repeat(300)),
            Value::Str(Cow::Owned("v".repeat(300))),
        ));
        kv.clear(64, 256);
        assert_eq!(kv.take_text().capacity(), 0);
        let mut kv = KeyValues::from_vec(vec![(Cow::Borrowed("k"), Value::Null); 65]);
        kv.clear(64, 256);
        assert_eq!(kv.capacity(), 0);
    }
}
