//! The tables in memory as Apache Arrow record batches: what the writer would write to
//! Parquet files, handed over without files (to Python's pyarrow through the Arrow C data
//! interface, for one).
//!
//! The columns have the Arrow types pyarrow gives the Parquet files' columns when it reads
//! them: `uint64`, `uint32`, `int64`, `bool` and `string`, nullable where the file's column is
//! `OPTIONAL`, so that a table made here equals the one `pyarrow.parquet.read_table` reads from
//! the file the writer writes. A batch holds a row group's rows ([`super::columns::GROUP`]).

use std::sync::Arc;

pub use arrow_array::ArrayRef;
use arrow_array::{BooleanArray, Int64Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use parquet::data_type::ByteArray;

use super::schema::{Kind, Spec};

/// One table's rows as Arrow record batches, with its schema.
pub struct Batches {
    /// The table's name (`samples`, `frames`, ...).
    pub name: &'static str,
    /// The columns' names, types and nullability.
    pub schema: SchemaRef,
    /// The rows, a row group at a time; none for an empty table.
    pub batches: Vec<RecordBatch>,
}

impl Batches {
    /// No rows yet of the table of columns `specs` (`profile_id` first).
    pub(super) fn new(name: &'static str, specs: &[Spec]) -> Batches {
        let fields: Vec<Field> =
            specs.iter().map(|s| Field::new(s.name, data_type(s.kind), s.nullable)).collect();
        Batches { name, schema: Arc::new(Schema::new(fields)), batches: Vec::new() }
    }

    /// Adds a batch of `rows` rows: `profile_id` on each, then `columns` in schema order.
    pub(super) fn push(
        &mut self,
        profile_id: &ByteArray,
        rows: usize,
        columns: Vec<ArrayRef>,
    ) -> Result<(), ArrowError> {
        if rows == 0 {
            return Ok(());
        }
        let mut all = Vec::with_capacity(columns.len() + 1);
        all.push(constant_text(profile_id.data(), rows)?);
        all.extend(columns);
        self.batches.push(RecordBatch::try_new(self.schema.clone(), all)?);
        Ok(())
    }

    /// The rows of every batch.
    pub fn rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }
}

/// The Arrow type of a column kind.
fn data_type(kind: Kind) -> DataType {
    match kind {
        Kind::U64 => DataType::UInt64,
        Kind::U32 => DataType::UInt32,
        Kind::I64 => DataType::Int64,
        Kind::Bool => DataType::Boolean,
        Kind::Text => DataType::Utf8,
    }
}

/// `dense` (the present values, in row order) spread over `rows` rows, nulls where `present`
/// says; every row present without it.
fn spread<T: Copy + Default>(
    dense: impl Iterator<Item = T>,
    present: Option<impl Iterator<Item = bool>>,
    rows: usize,
) -> (Vec<T>, Option<Vec<bool>>) {
    let Some(present) = present else {
        return (dense.collect(), None);
    };
    let present: Vec<bool> = present.collect();
    let mut dense = dense;
    let values = present.iter().map(|&p| if p { dense.next().unwrap_or_default() } else { T::default() });
    let values: Vec<T> = values.collect();
    debug_assert_eq!(values.len(), rows);
    (values, Some(present))
}

/// An integer column of `kind` from values kept in their Parquet physical type (an unsigned
/// value's bits in a signed integer of its width).
pub(super) fn integers<T: Copy + Default + Into<i64>>(
    kind: Kind,
    dense: &[T],
    present: Option<impl Iterator<Item = bool>>,
    rows: usize,
) -> ArrayRef {
    let (values, present) = spread(dense.iter().map(|&v| v.into()), present, rows);
    let nulls = present.map(arrow_buffer_nulls);
    match kind {
        Kind::U64 => Arc::new(UInt64Array::new(values.iter().map(|&v| v as u64).collect(), nulls)),
        Kind::U32 => Arc::new(UInt32Array::new(values.iter().map(|&v| v as u32).collect(), nulls)),
        _ => Arc::new(Int64Array::new(values.into(), nulls)),
    }
}

/// A boolean column.
pub(super) fn booleans(dense: &[bool], present: Option<impl Iterator<Item = bool>>, rows: usize) -> ArrayRef {
    let (values, present) = spread(dense.iter().copied(), present, rows);
    Arc::new(BooleanArray::new(values.into(), present.map(arrow_buffer_nulls)))
}

/// A text column (the writer pushes only UTF-8).
pub(super) fn texts<'a>(
    dense: impl Iterator<Item = &'a [u8]>,
    present: Option<impl Iterator<Item = bool>>,
    rows: usize,
) -> ArrayRef {
    let (values, present) = spread(dense.map(Some), present, rows);
    let text = |v: Option<&'a [u8]>| std::str::from_utf8(v.unwrap_or_default()).unwrap_or_default();
    let array: StringArray = match present {
        None => values.into_iter().map(|v| Some(text(v))).collect(),
        Some(present) => values.into_iter().zip(present).map(|(v, p)| p.then(|| text(v))).collect(),
    };
    Arc::new(array)
}

/// `rows` rows of the same text.
fn constant_text(value: &[u8], rows: usize) -> Result<ArrayRef, ArrowError> {
    let text = std::str::from_utf8(value).map_err(|e| ArrowError::InvalidArgumentError(e.to_string()))?;
    Ok(Arc::new(StringArray::from_iter_values(std::iter::repeat_n(text, rows))))
}

fn arrow_buffer_nulls(present: Vec<bool>) -> arrow_buffer::NullBuffer {
    arrow_buffer::NullBuffer::from(present)
}
