//! A trie of topic patterns, to find every subscription a topic matches.
//!
//! Each pattern is a path from the root, one edge per segment: literal edges
//! by text, plus at most one `*` edge and one `#` edge per node. Matching a
//! topic runs the trie as an NFA: it keeps the set of nodes the topic prefix
//! can have reached, so the work is `O(topic segments × live nodes)` however
//! many `#`s the patterns hold, where a backtracking walk would be exponential.

use std::collections::HashMap;

use super::{Segment, TopicPattern};

/// Patterns of many subscriptions in a trie over segments.
///
/// Ids are subscription indices chosen by the caller; the same id may be
/// inserted with several patterns, and then matches when any of them does.
#[derive(Debug, Clone, Default)]
pub(crate) struct PatternTrie {
    /// Arena of nodes; edges are indices into it. Index 0 is the root once
    /// anything was inserted, and the arena is empty before that.
    nodes: Vec<Node>,
}

/// One node: the patterns that share a prefix of segments.
#[derive(Debug, Clone, Default)]
struct Node {
    /// Children by literal segment.
    literals: HashMap<Box<str>, usize>,
    /// The child reached through a `*` segment.
    star: Option<usize>,
    /// The child reached through a `#` segment.
    hash: Option<usize>,
    /// Whether this node is its parent's `hash` child. Such a node may
    /// consume any further segment and stay where it is: that loop is how
    /// `#` matches more than one segment.
    after_hash: bool,
    /// Ids of the patterns that end here, without duplicates.
    ids: Vec<usize>,
}

impl PatternTrie {
    /// An empty trie, which matches nothing.
    pub(crate) const fn new() -> PatternTrie {
        PatternTrie { nodes: Vec::new() }
    }

    /// Adds `pattern` for subscription `id`.
    ///
    /// Inserting the same `(pattern, id)` twice has no further effect.
    pub(crate) fn insert(&mut self, pattern: &TopicPattern, id: usize) {
        if self.nodes.is_empty() {
            self.nodes.push(Node::default());
        }
        let mut at = 0;
        for segment in &*pattern.segments {
            let existing = match segment {
                Segment::Literal(text) => self.nodes[at].literals.get(text).copied(),
                Segment::Star => self.nodes[at].star,
                Segment::Hash => self.nodes[at].hash,
            };
            at = match existing {
                Some(child) => child,
                None => {
                    let child = self.nodes.len();
                    let after_hash = matches!(segment, Segment::Hash);
                    self.nodes.push(Node {
                        after_hash,
                        ..Node::default()
                    });
                    let parent = &mut self.nodes[at];
                    match segment {
                        Segment::Literal(text) => {
                            parent.literals.insert(text.clone(), child);
                        }
                        Segment::Star => parent.star = Some(child),
                        Segment::Hash => parent.hash = Some(child),
                    }
                    child
                }
            };
        }
        let ids = &mut self.nodes[at].ids;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }

    /// The ids whose patterns match `topic`, sorted ascending and without
    /// duplicates.
    ///
    /// Like [`TopicPattern::matches`], this splits `topic` on every `.`
    /// without validating it.
    #[must_use]
    pub(crate) fn matching(&self, topic: &str) -> Vec<usize> {
        if self.nodes.is_empty() {
            return Vec::new();
        }
        let mut states = vec![0];
        self.close_over_hash(&mut states);
        let mut next = Vec::new();
        for segment in topic.split('.') {
            next.clear();
            for &at in &states {
                let node = &self.nodes[at];
                if let Some(&child) = node.literals.get(segment) {
                    next.push(child);
                }
                next.extend(node.star);
                if node.after_hash {
                    next.push(at);
                }
            }
            self.close_over_hash(&mut next);
            std::mem::swap(&mut states, &mut next);
            if states.is_empty() {
                return Vec::new();
            }
        }
        let mut ids: Vec<usize> = states
            .iter()
            .flat_map(|&at| self.nodes[at].ids.iter().copied())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// Adds to `states` every node reachable from them through `#` edges
    /// alone (a `#` may match zero segments), then sorts and deduplicates
    /// `states` so the set never grows past the number of nodes.
    fn close_over_hash(&self, states: &mut Vec<usize>) {
        // `states` grows while we walk it; the trie is a tree, so each
        // chain of `#` edges ends.
        let mut i = 0;
        while i < states.len() {
            if let Some(child) = self.nodes[states[i]].hash {
                states.push(child);
            }
            i += 1;
        }
        states.sort_unstable();
        states.dedup();
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn trie_of(patterns: &[(&str, usize)]) -> PatternTrie {
        let mut trie = PatternTrie::new();
        for &(pattern, id) in patterns {
            trie.insert(&TopicPattern::parse(pattern).unwrap(), id);
        }
        trie
    }

    #[track_caller]
    fn check(patterns: &[(&str, usize)], topic: &str, expected: &[usize]) {
        assert_eq!(
            trie_of(patterns).matching(topic),
            expected,
            "patterns {patterns:?}, topic {topic:?}"
        );
    }

    #[test]
    fn matching() {
        let subscriptions: &[(&str, usize)] = &[
            ("#", 0),
            ("error.#", 1),
            ("*.app.db.#", 2),
            ("warn.*", 3),
            ("#.db", 4),
            ("a.#.b.#.c", 5),
            ("warn.app", 6),
            // Subscription 7 has two patterns.
            ("info.#", 7),
            ("#.pool", 7),
        ];
        #[rustfmt::skip]
        let cases: &[(&str, &[usize])] = &[
            ("error", &[0, 1]),
            ("error.x.y", &[0, 1]),
            ("warn", &[0]),
            ("warn.app", &[0, 3, 6]),
            ("warn.app.db", &[0, 2, 4]),
            ("warn.db", &[0, 3, 4]),
            ("info.app.db.pool", &[0, 2, 7]),
            ("debug.pool", &[0, 7]),
            ("a.b.c", &[0, 5]),
            ("a.x.b.y.z.c", &[0, 5]),
            ("a.c.b", &[0]),
        ];
        for &(topic, expected) in cases {
            check(subscriptions, topic, expected);
        }
    }

    #[test]
    fn edge_cases() {
        check(&[], "warn", &[]);
        assert_eq!(PatternTrie::default().matching("warn"), Vec::<usize>::new());
        // The same id through several matching patterns is reported once.
        check(
            &[("#", 3), ("warn.#", 3), ("warn", 3), ("warn", 3)],
            "warn",
            &[3],
        );
        // Ids come back sorted, not in insertion order.
        check(&[("warn", 9), ("#", 2), ("*", 5)], "warn", &[2, 5, 9]);
        // A `#` chain, where the same node is reached in several ways.
        check(&[("#.#.#", 1), ("#.a.#", 2), ("#.*.*.#", 3)], "a", &[1, 2]);
        // Patterns that share a prefix but end at different depths.
        check(
            &[("warn", 1), ("warn.app", 2), ("warn.app.db", 3)],
            "warn.app",
            &[2],
        );
    }

    #[test]
    fn many_hashes_do_not_blow_up() {
        let pattern = format!("{}.z", ["#.a"; 30].join("."));
        let trie = trie_of(&[(&pattern, 1)]);
        assert_eq!(trie.matching(&["a"; 60].join(".")), Vec::<usize>::new());
        assert_eq!(trie.matching(&format!("{}.z", ["a"; 60].join("."))), [1]);
    }

    /// A reference matcher written independently of [`TopicPattern::matches`]:
    /// plain backtracking over the raw pattern text (exponential, but the
    /// generated inputs are tiny).
    fn reference_matches(pattern: &[&str], topic: &[&str]) -> bool {
        match pattern.split_first() {
            None => topic.is_empty(),
            Some((&"#", rest)) => {
                (0..=topic.len()).any(|skip| reference_matches(rest, &topic[skip..]))
            }
            Some((&"*", rest)) => !topic.is_empty() && reference_matches(rest, &topic[1..]),
            Some((literal, rest)) => {
                topic.first() == Some(literal) && reference_matches(rest, &topic[1..])
            }
        }
    }

    fn pattern_strategy() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(&["a", "b", "c", "*", "#"][..]), 1..=6)
            .prop_map(|s| s.join("."))
    }

    fn topic_strategy() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop::sample::select(&["a", "b", "c", "warn", ""][..]),
            1..=7,
        )
        .prop_map(|s| s.join("."))
    }

    fn config() -> ProptestConfig {
        if cfg!(miri) {
            // Miri is slow, and its isolation forbids the regression file.
            ProptestConfig {
                cases: 8,
                failure_persistence: None,
                ..ProptestConfig::default()
            }
        } else {
            ProptestConfig {
                cases: 256,
                ..ProptestConfig::default()
            }
        }
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn trie_agrees_with_direct_matching(
            subscriptions in prop::collection::vec((pattern_strategy(), 0..6usize), 1..=8),
            topic in topic_strategy(),
        ) {
            let topic_segments: Vec<&str> = topic.split('.').collect();
            let mut trie = PatternTrie::new();
            let mut expected = Vec::new();
            for (source, id) in &subscriptions {
                let pattern = TopicPattern::parse(source).unwrap();
                let direct = pattern.matches(&topic);
                let source_segments: Vec<&str> = source.split('.').collect();
                prop_assert_eq!(
                    direct,
                    reference_matches(&source_segments, &topic_segments),
                    "pattern {:?}, topic {:?}", source, topic
                );
                if direct {
                    expected.push(*id);
                }
                trie.insert(&pattern, *id);
            }
            expected.sort_unstable();
            expected.dedup();
            prop_assert_eq!(trie.matching(&topic), expected);
        }
    }
}
