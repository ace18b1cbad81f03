//! `JsonSchemaError`: why a [`JsonSchema`](super::JsonSchema) could not be
//! built.

use std::error::Error as StdError;
use std::fmt;

use super::schema::JsonKey;

/// Why [`JsonSchemaBuilder::build`](crate::JsonSchemaBuilder::build)
/// refused the schema: what was wrong ([`kind`](Self::kind)), at which key
/// ([`key`](Self::key)), for which member ([`field`](Self::field)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonSchemaError {
    kind: JsonSchemaErrorKind,
    key: JsonKey,
    /// The field's name, or `None` for a constant.
    field: Option<&'static str>,
    /// A [`DuplicateKey`](JsonSchemaErrorKind::DuplicateKey) because `key`
    /// is needed as an object.
    not_an_object: bool,
}

/// What was wrong with a JSON schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum JsonSchemaErrorKind {
    /// A key, or one key of a path, is empty (or a member has no key).
    EmptyKey,
    /// Two members write the same key of one object, or one needs as an
    /// object a key another writes a value under.
    DuplicateKey,
    /// [`rename`](crate::JsonSchemaBuilder::rename) of a field that no
    /// member shows.
    NotInSchema,
    /// An empty [`kv_collision_prefix`](crate::JsonSchemaBuilder::kv_collision_prefix).
    EmptyPrefix,
}

impl JsonSchemaError {
    pub(super) fn new(
        kind: JsonSchemaErrorKind,
        key: JsonKey,
        field: Option<&'static str>,
    ) -> JsonSchemaError {
        JsonSchemaError {
            kind,
            key,
            field,
            not_an_object: false,
        }
    }

    pub(super) fn not_an_object(key: JsonKey, field: Option<&'static str>) -> JsonSchemaError {
        JsonSchemaError {
            not_an_object: true,
            ..JsonSchemaError::new(JsonSchemaErrorKind::DuplicateKey, key, field)
        }
    }

    /// What was wrong.
    #[must_use]
    pub fn kind(&self) -> JsonSchemaErrorKind {
        self.kind
    }

    /// The key (or path) at fault: the empty one, the one written twice, the
    /// one a rename asked for; empty for an empty prefix.
    #[must_use]
    pub fn key(&self) -> &JsonKey {
        &self.key
    }

    /// The name of the member's field (`"msg"`, `"kv"`, as
    /// [`JsonField::name`](crate::JsonField::name)), or `None` for a
    /// constant and for an empty prefix.
    #[must_use]
    pub fn field(&self) -> Option<&'static str> {
        self.field
    }
}

impl fmt::Display for JsonSchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("invalid JSON schema: ")?;
        let key = &self.key;
        let member = |f: &mut fmt::Formatter<'_>| match self.field {
            Some(name) => write!(f, "field `{name}`"),
            None => f.write_str("a constant"),
        };
        match self.kind {
            JsonSchemaErrorKind::EmptyKey => {
                member(f)?;
                if key.parts().is_empty() {
                    f.write_str(" has no key")
                } else {
                    write!(f, " has an empty key in {key}")
                }
            }
            JsonSchemaErrorKind::DuplicateKey if self.not_an_object => {
                member(f)?;
                write!(
                    f,
                    " needs {key} as an object, where another member writes a value"
                )
            }
            JsonSchemaErrorKind::DuplicateKey => {
                member(f)?;
                write!(f, " writes the key {key} another member writes")
            }
            JsonSchemaErrorKind::NotInSchema => write!(
                f,
                "cannot rename field `{}` to {key}: the schema does not show it",
                self.field.unwrap_or("?")
            ),
            JsonSchemaErrorKind::EmptyPrefix => {
                f.write_str("the key-value collision prefix is empty")
            }
        }
    }
}

impl StdError for JsonSchemaError {}
