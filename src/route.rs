//! Routing: which subscriptions a (level, target) reaches, cached per thread.
//!
//! A [`Snapshot`] is the immutable routing configuration: the subscriptions
//! in order, their filters, and a [`PatternTrie`] over their patterns. Every
//! reconfiguration builds a new snapshot and bumps the broker's generation.
//!
//! Each thread keeps, per broker, the snapshot it last saw and a cache of the
//! routes it computed from it, keyed by the level and the target's address
//! and length (then confirmed by comparing the text, since a dynamic target
//! may reuse an address). The routes of the thread's last two calls are
//! kept apart, so that a run of calls with one or two targets and levels
//! (a loop, a hot function) skips the hash too. A steady-state publish
//! therefore costs one atomic load (the generation), a comparison of three
//! words and the target's text (or one hash lookup), and no lock.
//!
//! The view also remembers the direct route (one subscription, no
//! predicate, journal or flight recorder, an interned topic) that its last
//! `log::info!` or deferred call took, with that call's key
//! ([`BrokerView::remember`], [`DirectRoute`]), and apart from it the last
//! route to two to [`COPIES`] such subscriptions, which take copies
//! ([`BrokerView::remember_copies`], [`CopiesRoute`]): the next call with
//! the same key takes it before the lookup (`broker/publish/direct.rs`).
//! Kept apart, so that a thread whose calls alternate between the two
//! kinds finds both. Thread-local hints say which keys those are
//! ([`maybe_remembered`], [`maybe_remembered_copies`]), so that a deferred
//! call with another key does not enter the view for it.

use std::cell::{Cell, RefCell};
use std::collections::hash_map::Entry as MapEntry;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Rc;

use log::LevelFilter;

use logbus_appenders::__private_api::StaticTopic;
use logbus_appenders::{Level, Record, Topic};

use crate::directive::Directives;
use crate::journal::{JournalRoute, Recorder};
use crate::queue::LaneProducer;
use crate::recycle::Stash;
use crate::subscription::{Predicate, SubShared};
use crate::sync::{lock, Arc, Mutex};
use crate::topic::{PatternTrie, TopicPattern};

/// One subscription as the router sees it.
pub(crate) struct Entry {
    pub(crate) sub: Arc<SubShared>,
    pub(crate) patterns: Vec<TopicPattern>,
    pub(crate) level: LevelFilter,
    /// `RUST_LOG`-style directives, checked with the level threshold.
    pub(crate) directives: Option<Directives>,
    pub(crate) predicate: Option<Predicate>,
    /// Records the journal named by `replayed_from` kept whose `seq` is
    /// below this skip the subscription: its replay delivered them
    /// (`journal/replay.rs`). 0 for any other. A replacement
    /// (`Broker::replace`) takes its old entry's, with `replayed_from` and
    /// `start`.
    pub(crate) live_from: u64,
    /// The journal that replay came from (`JournalCore::id`; 0 for none):
    /// a record another journal kept was not in it.
    pub(crate) replayed_from: u64,
    /// Every record below this skips it: a replay from an offset not yet
    /// published (`Replay::From`). 0 for any other.
    pub(crate) start: u64,
    pub(crate) recorder: Option<Arc<Recorder>>,
}

impl Entry {
    /// Whether this entry accepts `level` from `target` (patterns aside).
    fn accepts(&self, level: Level, target: &str) -> bool {
        level <= self.level
            && self
                .directives
                .as_ref()
                .map_or(true, |d| d.enabled(level, target))
    }

    /// Whether a replay delivered `record` (or it precedes the start), so
    /// that it skips this entry live. `journal`: the journal that keeps it
    /// (`JournalCore::id`), 0 for none. A record kept by a journal that was
    /// then removed, routed again to a subscription that replayed from the
    /// next one, was not in that replay: it reaches the subscription live.
    #[inline]
    pub(crate) fn replayed(&self, record: &Record, journal: u64) -> bool {
        let seq = record.seq();
        seq < self.start || (journal != 0 && journal == self.replayed_from && seq < self.live_from)
    }

    /// Whether this entry takes `record` by pattern, level and directives,
    /// and the broker-wide directives `global`: routing's decision for one
    /// record (a replay's, under the journal's lock: no user code).
    pub(crate) fn wants(&self, global: Option<&Directives>, record: &Record) -> bool {
        let (level, target) = (record.level(), record.target());
        global.map_or(true, |d| d.enabled(level, target))
            && self.accepts(level, target)
            && self
                .patterns
                .iter()
                .any(|p| p.matches(record.topic().as_str()))
    }

    /// The loosest level this entry can accept, or its flight recorder
    /// keep.
    fn max_level(&self) -> LevelFilter {
        let own = self
            .directives
            .as_ref()
            .map_or(self.level, |d| d.max_level().min(self.level));
        self.recorder.as_ref().map_or(own, |r| own.max(r.keep))
    }
}

impl Clone for Entry {
    fn clone(&self) -> Entry {
        Entry {
            sub: Arc::clone(&self.sub),
            patterns: self.patterns.clone(),
            level: self.level,
            directives: self.directives.clone(),
            predicate: self.predicate.clone(),
            live_from: self.live_from,
            replayed_from: self.replayed_from,
            start: self.start,
            recorder: self.recorder.clone(),
        }
    }
}

/// An immutable routing configuration.
pub(crate) struct Snapshot {
    /// Equal to the broker's generation counter when this snapshot was
    /// published.
    pub(crate) generation: u64,
    pub(crate) entries: Vec<Entry>,
    /// Broker-wide directives every record must also pass.
    pub(crate) global: Option<Directives>,
    /// The journal, and what it keeps of its own accord.
    pub(crate) journal: Option<JournalRoute>,
    trie: PatternTrie,
    /// The loosest level any subscription accepts.
    pub(crate) max_level: LevelFilter,
}

impl Snapshot {
    pub(crate) fn new(
        generation: u64,
        entries: Vec<Entry>,
        global: Option<Directives>,
        journal: Option<JournalRoute>,
    ) -> Snapshot {
        let mut trie = PatternTrie::new();
        for (id, entry) in entries.iter().enumerate() {
            for pattern in &entry.patterns {
                trie.insert(pattern, id);
            }
        }
        let max_level = entries
            .iter()
            .map(Entry::max_level)
            .chain(journal.as_ref().map(|j| j.level))
            .max()
            .unwrap_or(LevelFilter::Off)
            .min(
                global
                    .as_ref()
                    .map_or(LevelFilter::Trace, Directives::max_level),
            );
        Snapshot {
            generation,
            entries,
            global,
            journal,
            trie,
            max_level,
        }
    }

    /// Computes the route of `level` and `target` (the slow path).
    pub(crate) fn route(&self, level: Level, target: &str) -> Route {
        let topic = intern_topic(level, target);
        let globally = self
            .global
            .as_ref()
            .map_or(true, |d| d.enabled(level, target));
        let entries: Box<[u32]> = if globally {
            self.trie
                .matching(topic.as_str())
                .into_iter()
                .filter(|&i| self.entries[i].accepts(level, target))
                .map(|i| i as u32)
                .collect()
        } else {
            Box::default()
        };
        let journal = globally
            && self.journal.as_ref().is_some_and(|journal| {
                journal.keeps(level, topic.as_str())
                    || self.entries.iter().any(|e| {
                        e.recorder
                            .as_ref()
                            .is_some_and(|r| r.keeps(level, topic.as_str(), e.level))
                    })
            });
        let recorders = entries
            .iter()
            .any(|&i| self.entries[i as usize].recorder.is_some());
        Route {
            topic,
            entries,
            journal,
            recorders,
        }
    }
}

/// The subscriptions one (level, target) reaches under one snapshot.
pub(crate) struct Route {
    pub(crate) topic: Topic,
    /// Indices into `Snapshot::entries`, ascending.
    pub(crate) entries: Box<[u32]>,
    /// Whether the journal keeps these records (they are built even when
    /// no subscription wants them).
    pub(crate) journal: bool,
    /// Whether one of `entries` has a flight recorder.
    pub(crate) recorders: bool,
}

/// Most topics interned for the life of the process. Targets are nearly
/// always string literals, so real programs have tens to hundreds; past the
/// cap (dynamic targets) topics are reference-counted instead of leaked.
const INTERN_CAP: usize = 4096;

/// The longest target interned or kept in a thread's route cache. Targets
/// are module paths, tens of bytes; a longer one (made at run time, say
/// from a request) is routed on every call, its topic reference-counted,
/// so that neither the process's interned topics nor the route caches
/// (1,024 routes a thread) hold such targets whole: a review found a
/// thread holding a megabyte target in each of its cached routes.
const CACHED_TARGET_MAX: usize = 256;

/// Interned topics. The lock is taken only on a route-cache miss.
type TopicTable = HashMap<(Level, Box<str>), Topic>;

static TOPICS: Mutex<Option<TopicTable>> = Mutex::new(None);

fn intern_topic(level: Level, target: &str) -> Topic {
    if target.len() > CACHED_TARGET_MAX {
        return Topic::new(level, target);
    }
    let mut topics = lock(&TOPICS);
    let topics = topics.get_or_insert_with(HashMap::new);
    if let Some(topic) = topics.get(&(level, Box::from(target))) {
        return topic.clone();
    }
    if topics.len() >= INTERN_CAP {
        return Topic::new(level, target);
    }
    let topic = Topic::leak(level, target);
    topics.insert((level, target.into()), topic.clone());
    topic
}

/// Most routes one thread caches per broker before starting over; bounds
/// the memory a program with dynamic targets can make us hold.
const ROUTE_CACHE_CAP: usize = 1024;

/// A thread's view of one broker.
pub(crate) struct BrokerView {
    pub(crate) broker_id: u64,
    pub(crate) snapshot: Arc<Snapshot>,
    routes: HashMap<RouteKey, Rc<Route>, BuildHasherDefault<WordHasher>>,
    /// The last lookup's key and route, and the one before it (both also
    /// in `routes`, unless the cap cleared it since): a loop that logs
    /// with one or two targets skips the hash.
    last: Option<(RouteKey, Rc<Route>)>,
    before: Option<(RouteKey, Rc<Route>)>,
    /// This thread's lane into each subscription of the snapshot (same
    /// indices as `snapshot.entries`), made on the first record routed to
    /// it. Dropping one (thread exit, unsubscribe) closes the lane.
    lanes: Vec<Option<LaneProducer>>,
    /// Records recycled by workers, taken from the broker's pool a batch at
    /// a time (see `recycle.rs`).
    stash: Stash,
    /// A view made for one call (the thread's locals are gone): it makes no
    /// lanes and takes nothing from the pool; see `BrokerView::temporary`.
    temporary: bool,
    /// The direct route the last `log::info!` or deferred call took, with
    /// its key, for the next call with that key
    /// (`broker/publish/direct.rs`, `push_remembered` and
    /// `publish_remembered`): valid for this snapshot, so `refresh`
    /// forgets it.
    remembered: Option<(RouteKey, DirectRoute)>,
    /// The route to several subscriptions the last such call took the
    /// copies on (remembered by `publish_in`, taken by
    /// `push_remembered_copies`), kept as `remembered` is.
    copies: Option<(RouteKey, CopiesRoute)>,
}

/// The most subscriptions the direct path copies a call's parts to
/// (`broker/publish/direct.rs`, where the reasons are); a route to more
/// takes the usual path, one shared record.
pub(crate) const COPIES: usize = 4;

/// What the direct path's copies need of a route to two to [`COPIES`]
/// subscriptions, none with a predicate, no journal or flight recorder,
/// and an interned topic: the subscriptions' indices in the snapshot,
/// ascending (`ids[..count]`), and the topic. Their replays' starts are
/// read from the snapshot at each call.
#[derive(Clone, Copy)]
pub(crate) struct CopiesRoute {
    pub(crate) ids: [u32; COPIES],
    pub(crate) count: u8,
    pub(crate) topic: StaticTopic,
}

impl CopiesRoute {
    /// The subscriptions' indices.
    pub(crate) fn ids(&self) -> &[u32] {
        &self.ids[..usize::from(self.count)]
    }
}

/// A remembered copies' route and this thread's means to push on it: its
/// lanes (same indices as `snapshot.entries`) and stash.
pub(crate) struct RememberedCopies<'v> {
    pub(crate) snapshot: &'v Snapshot,
    pub(crate) route: CopiesRoute,
    pub(crate) lanes: &'v mut [Option<LaneProducer>],
    pub(crate) stash: &'v mut Stash,
}

/// What the direct path needs of a route to one subscription, none with a
/// predicate, no journal or flight recorder, and an interned topic: the
/// subscription's index in the snapshot, its replay's start, and the topic.
#[derive(Clone, Copy)]
pub(crate) struct DirectRoute {
    pub(crate) index: u32,
    pub(crate) start: u64,
    pub(crate) topic: StaticTopic,
}

/// A remembered route and this thread's means to push on it.
pub(crate) struct RememberedLane<'v> {
    pub(crate) snapshot: &'v Snapshot,
    pub(crate) route: DirectRoute,
    pub(crate) lane: &'v mut Option<LaneProducer>,
    pub(crate) stash: &'v mut Stash,
}

/// What a lookup gives the publisher: the route and this thread's means to
/// act on it.
pub(crate) struct Routed<'v> {
    pub(crate) snapshot: &'v Snapshot,
    pub(crate) route: &'v Route,
    pub(crate) lanes: &'v mut [Option<LaneProducer>],
    pub(crate) stash: &'v mut Stash,
    /// Whether the view is for one call only: push through the shared
    /// queue, not a lane.
    pub(crate) temporary: bool,
}

#[derive(PartialEq, Eq, Hash, Clone, Copy)]
struct RouteKey {
    level: Level,
    ptr: usize,
    len: usize,
}

impl RouteKey {
    /// The key of `level` and `target`: its address and length (the text
    /// is confirmed on a hit: the address may have been reused).
    #[inline(always)]
    fn of(level: Level, target: &str) -> RouteKey {
        RouteKey {
            level,
            ptr: target.as_ptr() as usize,
            len: target.len(),
        }
    }
}

impl BrokerView {
    /// A view of `snapshot` with an empty route cache.
    pub(crate) fn new(broker_id: u64, snapshot: Arc<Snapshot>) -> BrokerView {
        let lanes = std::iter::repeat_with(|| None)
            .take(snapshot.entries.len())
            .collect();
        BrokerView {
            broker_id,
            snapshot,
            routes: HashMap::default(),
            last: None,
            before: None,
            lanes,
            stash: Stash::default(),
            temporary: false,
            remembered: None,
            copies: None,
        }
    }

    /// A view for a single call on a thread whose locals are gone (a log
    /// call from a thread-local destructor at exit): a lane or a batch of
    /// recycled records would be thrown away at once, so it uses neither.
    pub(crate) fn temporary(broker_id: u64, snapshot: Arc<Snapshot>) -> BrokerView {
        BrokerView {
            temporary: true,
            ..BrokerView::new(broker_id, snapshot)
        }
    }

    /// The generation this view was built from.
    pub(crate) fn generation(&self) -> u64 {
        self.snapshot.generation
    }

    /// Replaces the snapshot and forgets the cached routes.
    /// Lanes into subscriptions the new snapshot still has are kept; the
    /// others are dropped, which closes them.
    pub(crate) fn refresh(&mut self, snapshot: Arc<Snapshot>) {
        let mut kept: Vec<(*const SubShared, LaneProducer)> = self
            .snapshot
            .entries
            .iter()
            .zip(std::mem::take(&mut self.lanes))
            .filter_map(|(entry, lane)| Some((Arc::as_ptr(&entry.sub), lane?)))
            .collect();
        self.lanes = snapshot
            .entries
            .iter()
            .map(|entry| {
                let at = kept
                    .iter()
                    .position(|(sub, _)| *sub == Arc::as_ptr(&entry.sub))?;
                Some(kept.swap_remove(at).1)
            })
            .collect();
        self.snapshot = snapshot;
        self.routes.clear();
        self.last = None;
        self.before = None;
        self.remembered = None;
        self.copies = None;
    }

    /// Remembers `route` as the direct route of `level` and `target`, for
    /// [`remembered`](Self::remembered), and says so to [`maybe_remembered`].
    pub(crate) fn remember(&mut self, level: Level, target: &str, route: DirectRoute) {
        let key = RouteKey::of(level, target);
        self.remembered = Some((key, route));
        let _ = REMEMBERED.try_with(|last| last.set(Some((self.broker_id, key))));
    }

    /// Remembers `route` as the copies' route of `level` and `target`, for
    /// [`remembered_copies`](Self::remembered_copies), and says so to
    /// [`maybe_remembered_copies`]. The one-subscription hint loses this
    /// key if it held it (the route it named is gone, or a deferred call
    /// would look there, miss, and never look here).
    pub(crate) fn remember_copies(&mut self, level: Level, target: &str, route: CopiesRoute) {
        let key = RouteKey::of(level, target);
        self.copies = Some((key, route));
        let hint = Some((self.broker_id, key));
        let _ = REMEMBERED_COPIES.try_with(|last| last.set(hint));
        let _ = REMEMBERED.try_with(|last| {
            if last.get() == hint {
                last.set(None);
            }
        });
    }

    /// Whether the view remembers a copies' route (for any key): a call
    /// with nothing to look for skips the call that would.
    #[inline(always)]
    pub(crate) fn remembers_copies(&self) -> bool {
        self.copies.is_some()
    }

    /// The remembered copies' route, if it is the route of `level` and
    /// `target` (the text confirmed, as `lookup` does), with this thread's
    /// lanes. Not on a temporary view, which has no lanes.
    #[inline(always)]
    pub(crate) fn remembered_copies(
        &mut self,
        level: Level,
        target: &str,
    ) -> Option<RememberedCopies<'_>> {
        let (key, route) = self.copies.as_ref()?;
        if *key != RouteKey::of(level, target)
            || !same_text(route.topic.topic().target(), target)
            || self.temporary
        {
            return None;
        }
        Some(RememberedCopies {
            snapshot: &self.snapshot,
            route: *route,
            lanes: &mut self.lanes,
            stash: &mut self.stash,
        })
    }

    /// The remembered direct route, if it is the route of `level` and
    /// `target` (the text confirmed, as `lookup` does), with this thread's
    /// lane into its subscription. Not on a temporary view, which has no
    /// lanes.
    #[inline(always)]
    pub(crate) fn remembered(&mut self, level: Level, target: &str) -> Option<RememberedLane<'_>> {
        let (key, route) = self.remembered.as_ref()?;
        if *key != RouteKey::of(level, target)
            || !same_text(route.topic.topic().target(), target)
            || self.temporary
        {
            return None;
        }
        Some(RememberedLane {
            snapshot: &self.snapshot,
            route: *route,
            lane: self.lanes.get_mut(route.index as usize)?,
            stash: &mut self.stash,
        })
    }

    /// The snapshot and the route of `level` and `target`, from the cache
    /// when possible. Inlined: a call would save and restore more
    /// registers than a hit takes.
    #[inline(always)]
    pub(crate) fn lookup(&mut self, level: Level, target: &str) -> Routed<'_> {
        let key = RouteKey::of(level, target);
        // The address may have been reused by a different dynamic target,
        // so the text is confirmed.
        let hit = |entry: &Option<(RouteKey, Rc<Route>)>| matches!(entry, Some((k, route)) if *k == key && same_text(route.topic.target(), target));
        if !hit(&self.last) {
            if hit(&self.before) {
                std::mem::swap(&mut self.last, &mut self.before);
            } else {
                self.before = self.last.take();
            }
        }
        let (routes, snapshot) = (&mut self.routes, &self.snapshot);
        let (_, route) = self
            .last
            .get_or_insert_with(|| (key, find(routes, snapshot, key, level, target)));
        Routed {
            snapshot: &self.snapshot,
            route,
            lanes: &mut self.lanes,
            stash: &mut self.stash,
            temporary: self.temporary,
        }
    }
}

/// The route of `key` from `routes`, computed from `snapshot` on a miss.
#[cold]
fn find(
    routes: &mut HashMap<RouteKey, Rc<Route>, BuildHasherDefault<WordHasher>>,
    snapshot: &Snapshot,
    key: RouteKey,
    level: Level,
    target: &str,
) -> Rc<Route> {
    if target.len() > CACHED_TARGET_MAX {
        // Held by the last two routes only (`BrokerView::last`, `before`).
        return Rc::new(snapshot.route(level, target));
    }
    if routes.len() >= ROUTE_CACHE_CAP && !routes.contains_key(&key) {
        routes.clear();
    }
    let route = match routes.entry(key) {
        MapEntry::Occupied(hit) if same_text(hit.get().topic.target(), target) => hit.into_mut(),
        MapEntry::Occupied(mut stale) => {
            stale.insert(Rc::new(snapshot.route(level, target)));
            stale.into_mut()
        }
        MapEntry::Vacant(miss) => miss.insert(Rc::new(snapshot.route(level, target))),
    };
    Rc::clone(route)
}

/// Whether two targets are the same text: inline for 8 to 16 bytes (most
/// targets), where a `memcmp` call would cost more than the comparison.
#[inline]
fn same_text(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if (8..=16).contains(&n) {
        // Two words that overlap when `n` is under 16. Both slices hold at
        // least eight bytes, so the conversions succeed.
        let word =
            |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().unwrap_or([0; 8]));
        return word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8);
    }
    a == b
}

/// Most brokers a thread keeps a view of (a program has one; tests a few).
const VIEWS_CAP: usize = 8;

thread_local! {
    /// This thread's views, oldest first (the oldest is evicted when full).
    static VIEWS: RefCell<Vec<BrokerView>> = const { RefCell::new(Vec::new()) };
}

thread_local! {
    /// The broker and key of the route this thread's view last remembered
    /// (`BrokerView::remember`): a call with another key does not look in
    /// the view for it. A hint: the view may have forgotten the route since
    /// (a refresh), and then the view says so.
    static REMEMBERED: Cell<Option<(u64, RouteKey)>> = const { Cell::new(None) };
    /// As `REMEMBERED`, for the copies' route (`BrokerView::remember_copies`).
    static REMEMBERED_COPIES: Cell<Option<(u64, RouteKey)>> = const { Cell::new(None) };
}

/// Whether this thread's view of broker `broker_id` may remember the direct
/// route of `level` and `target` to one subscription (see
/// [`BrokerView::remembered`], which decides).
#[inline(always)]
pub(crate) fn maybe_remembered(broker_id: u64, level: Level, target: &str) -> bool {
    REMEMBERED
        .try_with(|last| last.get() == Some((broker_id, RouteKey::of(level, target))))
        .unwrap_or(false)
}

/// [`maybe_remembered`] for the route to several subscriptions (see
/// [`BrokerView::remembered_copies`]). Out of line: a call that finds its
/// one-subscription route does not make it, and inline, with the other
/// check, both were made at every call (4 instructions more a call on that
/// route).
#[inline(never)]
pub(crate) fn maybe_remembered_copies(broker_id: u64, level: Level, target: &str) -> bool {
    REMEMBERED_COPIES
        .try_with(|last| last.get() == Some((broker_id, RouteKey::of(level, target))))
        .unwrap_or(false)
}

/// Runs `f` with this thread's view of a broker, creating it from
/// `snapshot()` if needed, or returns `None` if the thread-local storage is
/// gone (thread exit) or already borrowed (cannot happen: re-entrant log calls
/// are discarded before routing).
pub(crate) fn with_view<R>(
    broker_id: u64,
    snapshot: impl FnOnce() -> Arc<Snapshot>,
    f: impl FnOnce(&mut BrokerView) -> R,
) -> Option<R> {
    VIEWS
        .try_with(|views| {
            let mut views = views.try_borrow_mut().ok()?;
            let index = match views.iter().position(|v| v.broker_id == broker_id) {
                Some(i) => i,
                None => {
                    if views.len() >= VIEWS_CAP {
                        views.remove(0);
                    }
                    views.push(BrokerView::new(broker_id, snapshot()));
                    views.len() - 1
                }
            };
            Some(f(&mut views[index]))
        })
        .ok()
        .flatten()
}

/// Forgets this thread's view of a broker (its snapshot holds the broker's
/// subscriptions alive).
pub(crate) fn forget_view(broker_id: u64) {
    let _ = VIEWS.try_with(|views| {
        if let Ok(mut views) = views.try_borrow_mut() {
            views.retain(|v| v.broker_id != broker_id);
        }
    });
}

/// A multiplicative hasher for keys made of a few machine words. The keys
/// are addresses and lengths, not attacker-chosen strings, so a DoS-resistant
/// hash (SipHash) would only cost time on every publish.
#[derive(Default)]
struct WordHasher(u64);

impl Hasher for WordHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view() -> BrokerView {
        BrokerView::new(1, Arc::new(Snapshot::new(1, Vec::new(), None, None)))
    }

    fn routed_target(view: &mut BrokerView, level: Level, target: &str) -> String {
        let routed = view.lookup(level, target);
        assert_eq!(routed.route.topic.level(), level);
        routed.route.topic.target().to_owned()
    }

    #[test]
    fn a_reused_address_with_new_text_is_routed_anew() {
        let mut view = view();
        // Each length class of the text comparison: short, one or two
        // overlapping words, long.
        for text in [
            "app",
            "app::http",
            "app::http::client",
            "app::http::client::pool",
        ] {
            let mut target = text.to_owned();
            let at = target.as_ptr();
            assert_eq!(routed_target(&mut view, Level::Info, &target), text);
            // Same address and length, other text: the last route and
            // the hashed one must both be refused.
            target.make_ascii_uppercase();
            assert_eq!(target.as_ptr(), at);
            let other = text.to_ascii_uppercase();
            assert_eq!(routed_target(&mut view, Level::Info, &target), other);
            assert_eq!(routed_target(&mut view, Level::Warn, &target), other);
            assert_eq!(routed_target(&mut view, Level::Info, text), text);
            assert_eq!(routed_target(&mut view, Level::Info, &target), other);
        }
    }

    #[test]
    fn two_targets_in_turn_keep_their_routes_and_a_rewritten_one_is_routed_anew() {
        let mut view = view();
        let mut first = "app::first".to_owned();
        for _ in 0..3 {
            assert_eq!(routed_target(&mut view, Level::Info, &first), "app::first");
            assert_eq!(
                routed_target(&mut view, Level::Info, "app::second"),
                "app::second"
            );
        }
        // `first`'s route is now the one before the last: its address and
        // length match, its text no longer does.
        first.make_ascii_uppercase();
        assert_eq!(routed_target(&mut view, Level::Info, &first), "APP::FIRST");
        assert_eq!(
            routed_target(&mut view, Level::Info, "app::second"),
            "app::second"
        );
        assert_eq!(routed_target(&mut view, Level::Info, &first), "APP::FIRST");
    }

    #[test]
    fn the_cap_starts_over_and_the_last_route_stays_the_hashed_one() {
        let mut view = view();
        for i in 0..3 * ROUTE_CACHE_CAP {
            let target = format!("t{i:06}");
            assert_eq!(routed_target(&mut view, Level::Info, &target), target);
            assert!(view.routes.len() <= ROUTE_CACHE_CAP);
            let Some((key, last)) = &view.last else {
                panic!("no last route after a lookup");
            };
            assert!(Rc::ptr_eq(last, &view.routes[key]));
        }
        assert!(view
            .routes
            .values()
            .all(|route| Rc::strong_count(route) <= 2));
    }

    /// A target longer than [`CACHED_TARGET_MAX`] is routed on every call:
    /// no cached route and no interned topic keeps it, whatever number of
    /// such targets a thread logs with; one at the limit is cached.
    #[test]
    fn a_long_target_is_neither_cached_nor_interned() {
        let mut view = view();
        for i in 0..2 * ROUTE_CACHE_CAP {
            let target = format!("{i:0width$}", width = CACHED_TARGET_MAX + 1);
            assert_eq!(routed_target(&mut view, Level::Info, &target), target);
            assert!(produce_static(&view).is_none(), "interned: {target}");
        }
        assert!(view.routes.is_empty(), "{} cached", view.routes.len());
        let target = "t".repeat(CACHED_TARGET_MAX);
        assert_eq!(routed_target(&mut view, Level::Info, &target), target);
        assert_eq!(view.routes.len(), 1);
        assert!(produce_static(&view).is_some());
    }

    /// The last route's topic, if interned.
    fn produce_static(view: &BrokerView) -> Option<()> {
        let (_, route) = view.last.as_ref()?;
        logbus_appenders::__private_api::static_topic(&route.topic).map(|_| ())
    }

    #[test]
    fn text_comparison_agrees_with_equality() {
        let texts = [
            "",
            "a",
            "ab",
            "abc",
            "abcd",
            "abcdefg",
            "abcdefgh",
            "abcdefghi",
        ];
        let long = [
            "abcdefghijklmnop",
            "abcdefghijklmnoq",
            "bbcdefghijklmnop",
            "abcdefghijklmnopq",
        ];
        for a in texts.iter().chain(&long) {
            for b in texts.iter().chain(&long) {
                assert_eq!(same_text(a, b), a == b, "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn a_refresh_forgets_the_last_route() {
        let mut view = view();
        let target = "app::db";
        let _ = view.lookup(Level::Info, target);
        let _ = view.lookup(Level::Info, "app::http");
        assert!(view.last.is_some() && view.before.is_some());
        view.refresh(Arc::new(Snapshot::new(2, Vec::new(), None, None)));
        assert!(view.last.is_none() && view.before.is_none() && view.routes.is_empty());
        let routed = view.lookup(Level::Info, target);
        assert!(routed.route.entries.is_empty());
        assert_eq!(routed.snapshot.generation, 2);
    }
}
