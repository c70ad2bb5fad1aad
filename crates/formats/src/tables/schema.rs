//! The tables' columns: names, kinds and whether they may be null. Parquet-free, so that the
//! schema (and its documentation test) stands without the `tables` feature.

/// What a column holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An unsigned 64-bit integer: counts, addresses, ids (`INT64` as `INTEGER(64,false)`;
    /// DuckDB `UBIGINT`, pandas `uint64`).
    U64,
    /// An unsigned 32-bit integer: indices, lines, sizes (`INT32` as `INTEGER(32,false)`; DuckDB
    /// `UINTEGER`, pandas `uint32`).
    U32,
    /// A signed 64-bit integer (`INT64`; DuckDB `BIGINT`, pandas `int64`).
    I64,
    /// `BOOLEAN`.
    Bool,
    /// UTF-8 text (`BYTE_ARRAY` as `STRING`; DuckDB `VARCHAR`, pandas `object`).
    Text,
}

impl Kind {
    /// The type as DuckDB shows it.
    pub fn sql(self) -> &'static str {
        match self {
            Kind::U64 => "UBIGINT",
            Kind::U32 => "UINTEGER",
            Kind::I64 => "BIGINT",
            Kind::Bool => "BOOLEAN",
            Kind::Text => "VARCHAR",
        }
    }

    #[cfg_attr(not(feature = "tables"), allow(dead_code))]
    pub(super) fn schema(self) -> &'static str {
        match self {
            Kind::U64 => "INT64 {} (INTEGER(64,false))",
            Kind::U32 => "INT32 {} (INTEGER(32,false))",
            Kind::I64 => "INT64 {} (INTEGER(64,true))",
            Kind::Bool => "BOOLEAN {}",
            Kind::Text => "BYTE_ARRAY {} (STRING)",
        }
    }

    #[cfg_attr(not(feature = "tables"), allow(dead_code))]
    pub(super) fn what(self) -> &'static str {
        match self {
            Kind::U64 | Kind::U32 => "an unsigned integer",
            Kind::I64 => "an integer",
            Kind::Bool => "a boolean",
            Kind::Text => "a string",
        }
    }
}

/// One column of a table's schema: its name, kind, and whether it may be null.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// The column's name in the Parquet file.
    pub name: &'static str,
    /// The column's value type.
    pub kind: Kind,
    /// Whether the column may hold nulls.
    pub nullable: bool,

    /// Whether the writer derives the column from others for the reader's convenience (an
    /// address from an offset, a name from an id): checked for its type, never read back.
    pub derived: bool,
    /// Whether a file may lack the column (read as nulls): the stack tables of a query's
    /// result hold what the query kept.
    pub may_be_absent: bool,
}

impl Spec {
    /// The same column, derived from others.
    pub const fn derived(self) -> Spec {
        Spec { derived: true, ..self }
    }

    /// The same column, which a file may lack.
    pub const fn may_be_absent(self) -> Spec {
        Spec { may_be_absent: true, ..self }
    }
}

/// A required column.
pub const fn req(name: &'static str, kind: Kind) -> Spec {
    Spec { name, kind, nullable: false, derived: false, may_be_absent: false }
}

/// A column that may be null.
pub const fn opt(name: &'static str, kind: Kind) -> Spec {
    Spec { name, kind, nullable: true, derived: false, may_be_absent: false }
}
