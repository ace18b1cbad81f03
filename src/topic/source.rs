//! Patterns as builders take them: text checked when the setting is
//! applied (so the error names the pattern and the position), or already
//! parsed.

use super::{TopicParseError, TopicParseErrorKind, TopicPattern};

/// A pattern as given to the builder: parsed at subscribe time so that the
/// error surfaces from `subscribe`, naming the pattern and the position.
#[derive(Debug, Clone)]
pub(crate) enum PatternSource {
    Text(String),
    Parsed(TopicPattern),
}

/// Parses patterns as given to a builder; no patterns means `#`. A
/// pattern no topic can match is refused
/// ([`TopicParseErrorKind::NeverMatches`]): it would subscribe fine and
/// match nothing.
pub(crate) fn parse_patterns(
    sources: &[PatternSource],
) -> Result<Vec<TopicPattern>, TopicParseError> {
    if sources.is_empty() {
        return Ok(vec![TopicPattern::match_all()]);
    }
    sources
        .iter()
        .map(|p| {
            let parsed = match p {
                PatternSource::Text(text) => TopicPattern::parse(text)?,
                PatternSource::Parsed(parsed) => parsed.clone(),
            };
            match parsed.never_matches() {
                Some(at) => Err(TopicParseError::new(
                    parsed.as_str(),
                    at,
                    TopicParseErrorKind::NeverMatches,
                )),
                None => Ok(parsed),
            }
        })
        .collect()
}
