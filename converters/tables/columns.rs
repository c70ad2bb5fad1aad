//! Tables as columns, and their Parquet files: what the writer fills row by row and the reader
//! gets back, one column at a time.
//!
//! Parquet stores each column with a physical type (`INT32`, `INT64`, `DOUBLE`, `BOOLEAN`,
//! `BYTE_ARRAY`) and a logical type on top (`INTEGER(64,false)` for an unsigned 64-bit count,
//! `STRING` for text). cfghub writes the types of [`Kind`]; it reads what other tools write back
//! leniently: any integer width, signed or not (a negative value where a count belongs is an
//! error naming its row), plain or dictionary-encoded strings, and every compression DuckDB or
//! pyarrow use by default (snappy, or none).

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use parquet::basic::{Compression, LogicalType, Type as Physical};
use parquet::column::reader::ColumnReader;
use parquet::column::writer::ColumnWriter;
use parquet::data_type::ByteArray;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::ColumnDescriptor;

use crate::error::{Error, Location, Result};

use super::schema::{Kind, Spec};

/// A column's values: integers as `u64` (a signed one as its two's complement bits).
#[derive(Clone, Debug)]
pub enum Data {
    Int(Vec<Option<u64>>),
    Float(Vec<Option<f64>>),
    Bool(Vec<Option<bool>>),
    Text(Vec<Option<String>>),
}

impl Data {
    fn for_kind(kind: Kind) -> Data {
        match kind {
            Kind::U64 | Kind::U32 | Kind::I64 => Data::Int(Vec::new()),
            Kind::F64 => Data::Float(Vec::new()),
            Kind::Bool => Data::Bool(Vec::new()),
            Kind::Text => Data::Text(Vec::new()),
        }
    }

    fn len(&self) -> usize {
        match self {
            Data::Int(v) => v.len(),
            Data::Float(v) => v.len(),
            Data::Bool(v) => v.len(),
            Data::Text(v) => v.len(),
        }
    }
}

/// A table being filled row by row, in the order of its schema.
pub struct Table {
    pub name: &'static str,
    pub specs: &'static [Spec],
    pub columns: Vec<Data>,
    /// The profile id every row carries as its first column.
    profile_id: Arc<str>,
    rows: usize,
}

impl Table {
    /// An empty table whose first column (`profile_id`) every row fills with `profile_id`.
    pub fn new(name: &'static str, specs: &'static [Spec], profile_id: &Arc<str>) -> Table {
        Table {
            name,
            specs,
            columns: specs.iter().skip(1).map(|s| Data::for_kind(s.kind)).collect(),
            profile_id: profile_id.clone(),
            rows: 0,
        }
    }

    /// Starts a row: push its values (after `profile_id`) in schema order.
    pub fn row(&mut self) -> Row<'_> {
        self.rows += 1;
        Row { columns: &mut self.columns, next: 0 }
    }

    /// Writes the table to `dir/<name>.parquet`, in row groups of at most a million rows.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let path = dir.join(format!("{}.parquet", self.name));
        let shown = path.display().to_string();
        let fail =
            |e: parquet::errors::ParquetError| Error::input(format!("cannot write table {}: {e}", self.name));
        let schema = format!(
            "message {} {{ {} }}",
            self.name,
            self.specs
                .iter()
                .map(|s| format!(
                    "{} {};",
                    if s.nullable { "OPTIONAL" } else { "REQUIRED" },
                    s.kind.schema().replace("{}", s.name)
                ))
                .collect::<Vec<_>>()
                .join(" ")
        );
        let schema = Arc::new(parquet::schema::parser::parse_message_type(&schema).map_err(fail)?);
        let mut props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_dictionary_enabled(false)
            .set_statistics_enabled(EnabledStatistics::Chunk)
            .set_created_by(format!("cfghub {}", env!("CARGO_PKG_VERSION")));
        for s in self.specs.iter().filter(|s| s.kind == Kind::Text) {
            props = props.set_column_dictionary_enabled(s.name.into(), true);
        }
        let file = File::create(&path).map_err(|e| Error::io(&shown, e))?;
        let out = std::io::BufWriter::with_capacity(1 << 20, file);
        let mut writer = SerializedFileWriter::new(out, schema, Arc::new(props.build())).map_err(fail)?;
        const GROUP: usize = 1 << 20;
        let mut start = 0;
        loop {
            let end = (start + GROUP).min(self.rows);
            let mut group = writer.next_row_group().map_err(fail)?;
            let mut index = 0;
            while let Some(mut column) = group.next_column().map_err(fail)? {
                let spec = self.specs[index];
                if index == 0 {
                    let ids = vec![ByteArray::from(self.profile_id.as_bytes().to_vec()); end - start];
                    write_column(column.untyped(), &Data::Text(Vec::new()), spec, start..end, Some(&ids))
                } else {
                    write_column(column.untyped(), &self.columns[index - 1], spec, start..end, None)
                }
                .map_err(fail)?;
                column.close().map_err(fail)?;
                index += 1;
            }
            group.close().map_err(fail)?;
            start = end;
            if start >= self.rows {
                break;
            }
        }
        let out = writer.into_inner().map_err(fail)?;
        out.into_inner().map_err(|e| Error::io(&shown, e.into_error()))?.sync_data().ok();
        Ok(())
    }
}

/// One row being pushed into a [`Table`].
pub struct Row<'a> {
    columns: &'a mut Vec<Data>,
    next: usize,
}

impl Row<'_> {
    fn column(&mut self) -> &mut Data {
        self.next += 1;
        &mut self.columns[self.next - 1]
    }

    /// An integer (unsigned, or a signed value's bits), or null.
    pub fn int(mut self, v: Option<u64>) -> Self {
        match self.column() {
            Data::Int(c) => c.push(v),
            other => unreachable!("integer pushed into {other:?}"),
        }
        self
    }
    pub fn u(self, v: u64) -> Self {
        self.int(Some(v))
    }
    pub fn f(mut self, v: Option<f64>) -> Self {
        match self.column() {
            Data::Float(c) => c.push(v),
            other => unreachable!("float pushed into {other:?}"),
        }
        self
    }
    pub fn b(mut self, v: Option<bool>) -> Self {
        match self.column() {
            Data::Bool(c) => c.push(v),
            other => unreachable!("bool pushed into {other:?}"),
        }
        self
    }
    pub fn s(mut self, v: Option<&str>) -> Self {
        match self.column() {
            Data::Text(c) => c.push(v.map(str::to_owned)),
            other => unreachable!("text pushed into {other:?}"),
        }
        self
    }
}

/// Definition levels and the present values of `rows` of an optional column.
fn levels<T: Clone, U>(values: &[Option<T>], map: impl Fn(&T) -> U) -> (Vec<i16>, Vec<U>) {
    let defs = values.iter().map(|v| i16::from(v.is_some())).collect();
    let present = values.iter().flatten().map(map).collect();
    (defs, present)
}

fn write_column(
    writer: &mut ColumnWriter<'_>,
    data: &Data,
    spec: Spec,
    rows: std::ops::Range<usize>,
    text: Option<&[ByteArray]>,
) -> parquet::errors::Result<()> {
    match (writer, data) {
        (ColumnWriter::ByteArrayColumnWriter(w), _) if text.is_some() => {
            w.write_batch(text.unwrap_or_default(), None, None)?;
        }
        (ColumnWriter::Int64ColumnWriter(w), Data::Int(v)) => {
            let (defs, vals) = levels(&v[rows], |&x| x as i64);
            w.write_batch(&vals, spec.nullable.then_some(&defs[..]), None)?;
        }
        (ColumnWriter::Int32ColumnWriter(w), Data::Int(v)) => {
            let (defs, vals) = levels(&v[rows], |&x| x as u32 as i32);
            w.write_batch(&vals, spec.nullable.then_some(&defs[..]), None)?;
        }
        (ColumnWriter::DoubleColumnWriter(w), Data::Float(v)) => {
            let (defs, vals) = levels(&v[rows], |&x| x);
            w.write_batch(&vals, spec.nullable.then_some(&defs[..]), None)?;
        }
        (ColumnWriter::BoolColumnWriter(w), Data::Bool(v)) => {
            let (defs, vals) = levels(&v[rows], |&x| x);
            w.write_batch(&vals, spec.nullable.then_some(&defs[..]), None)?;
        }
        (ColumnWriter::ByteArrayColumnWriter(w), Data::Text(v)) => {
            let (defs, vals) = levels(&v[rows], |x: &String| ByteArray::from(x.as_bytes().to_vec()));
            w.write_batch(&vals, spec.nullable.then_some(&defs[..]), None)?;
        }
        _ => unreachable!("column {} does not match its schema", spec.name),
    }
    Ok(())
}

/// A table read back: its columns by name, as the reader asked for them.
pub struct ReadTable {
    pub name: &'static str,
    /// The file it was read from, for error messages.
    pub file: String,
    pub rows: usize,
    columns: Vec<(&'static str, Data)>,
}

impl ReadTable {
    fn column(&self, name: &str) -> &Data {
        &self.columns.iter().find(|(n, _)| *n == name).unwrap_or_else(|| panic!("column {name} not read")).1
    }

    /// An integer column's values.
    pub fn ints(&self, name: &str) -> &[Option<u64>] {
        match self.column(name) {
            Data::Int(v) => v,
            _ => unreachable!("{name} is not an integer column"),
        }
    }
    pub fn floats(&self, name: &str) -> &[Option<f64>] {
        match self.column(name) {
            Data::Float(v) => v,
            _ => unreachable!("{name} is not a float column"),
        }
    }
    pub fn bools(&self, name: &str) -> &[Option<bool>] {
        match self.column(name) {
            Data::Bool(v) => v,
            _ => unreachable!("{name} is not a boolean column"),
        }
    }
    pub fn texts(&self, name: &str) -> &[Option<String>] {
        match self.column(name) {
            Data::Text(v) => v,
            _ => unreachable!("{name} is not a text column"),
        }
    }

    /// An error about one value of this table.
    pub fn error(&self, column: &str, row: usize, message: impl Into<String>) -> Error {
        Error::input(message)
            .in_file(&self.file)
            .at(Location::Path(format!("table {}, column {column}, row {row}", self.name)))
    }

    /// A required integer (the reader checked it is not null).
    pub fn int(&self, name: &str, row: usize) -> u64 {
        self.ints(name)[row].unwrap_or_default()
    }

    /// A required integer that must fit 32 bits.
    pub fn u32(&self, name: &str, row: usize) -> Result<u32> {
        let v = self.int(name, row);
        u32::try_from(v).map_err(|_| self.error(name, row, format!("{v} does not fit 32 bits")))
    }

    /// An optional integer that must fit 32 bits.
    pub fn opt_u32(&self, name: &str, row: usize) -> Result<Option<u32>> {
        match self.ints(name)[row] {
            None => Ok(None),
            Some(v) => u32::try_from(v)
                .map(Some)
                .map_err(|_| self.error(name, row, format!("{v} does not fit 32 bits"))),
        }
    }
}

/// Reads `dir/<name>.parquet`: the columns of `specs` it must have, each converted to its kind;
/// columns it has beyond those are ignored. With `profile_id`, the first column (`profile_id`)
/// is checked to hold that id on every row (from the row groups' statistics where they say)
/// rather than read.
pub fn read_table(
    dir: &Path,
    name: &'static str,
    specs: &'static [Spec],
    profile_id: Option<&str>,
) -> Result<ReadTable> {
    let path = dir.join(format!("{name}.parquet"));
    let shown = path.display().to_string();
    let file = File::open(&path).map_err(|e| {
        let missing = e.kind() == std::io::ErrorKind::NotFound;
        let err = Error::io(&shown, e);
        if missing {
            Error::input(format!("table {name} is missing: there is no {name}.parquet"))
                .in_file(&shown)
                .with_hint(
                    "a tables folder holds every table cfghub writes; copy the ones you did not change",
                )
        } else {
            err
        }
    })?;
    let bad = |e: parquet::errors::ParquetError| {
        Error::input(format!("table {name} is not a readable Parquet file: {e}")).in_file(&shown)
    };
    let reader = SerializedFileReader::new(file).map_err(bad)?;
    let schema = reader.metadata().file_metadata().schema_descr_ptr();
    let rows = usize::try_from(reader.metadata().file_metadata().num_rows().max(0)).unwrap_or(usize::MAX);
    let mut table = ReadTable { name, file: shown.clone(), rows, columns: Vec::new() };
    for spec in specs {
        let Some(index) = schema.columns().iter().position(|c| c.path().parts() == [spec.name]) else {
            return Err(table.error(spec.name, 0, format!("table {name} has no column {}", spec.name)));
        };
        let descr = schema.column(index);
        check_type(&table, spec, &descr)?;
        if let (Some(id), "profile_id") = (profile_id, spec.name) {
            check_profile_id(&reader, index, &descr, &table, id).map_err(|e| e.unwrap_or_else(bad))?;
            continue;
        }
        let mut data = Data::for_kind(spec.kind);
        for g in 0..reader.num_row_groups() {
            let group = reader.get_row_group(g).map_err(bad)?;
            let column = group.get_column_reader(index).map_err(bad)?;
            let first = data.len();
            read_column(column, &descr, &mut data).map_err(bad)?;
            check_values(&table, spec, &descr, &data, first)?;
        }
        if data.len() != rows {
            return Err(table.error(
                spec.name,
                data.len(),
                format!("the column holds {} values for {rows} rows", data.len()),
            ));
        }
        table.columns.push((spec.name, data));
    }
    // No spec: the table's row count alone.
    if specs.is_empty() {
        table.rows = rows;
    }
    Ok(table)
}

/// Every row of column `index` holds `id`: the statistics of each row group say so, or the
/// values read show it.
fn check_profile_id(
    reader: &SerializedFileReader<File>,
    index: usize,
    descr: &ColumnDescriptor,
    table: &ReadTable,
    id: &str,
) -> std::result::Result<(), std::result::Result<Error, parquet::errors::ParquetError>> {
    let mut first = 0usize;
    for g in 0..reader.num_row_groups() {
        let meta = reader.metadata().row_group(g);
        let rows = usize::try_from(meta.num_rows().max(0)).unwrap_or(usize::MAX);
        let stats = meta.column(index).statistics();
        let same = stats.is_some_and(|s| {
            s.min_bytes_opt() == Some(id.as_bytes())
                && s.max_bytes_opt() == Some(id.as_bytes())
                && s.null_count_opt() == Some(0)
        });
        if !same {
            let mut data = Data::Text(Vec::new());
            let column = reader.get_row_group(g).and_then(|r| r.get_column_reader(index)).map_err(Err)?;
            read_column(column, descr, &mut data).map_err(Err)?;
            let Data::Text(values) = data else { unreachable!() };
            if let Some(row) = values.iter().position(|v| v.as_deref() != Some(id)) {
                let found = values[row].as_deref().unwrap_or("null");
                return Err(Ok(table
                    .error(
                        "profile_id",
                        first + row,
                        format!("a row of profile {found:?} among the tables of {id:?}"),
                    )
                    .with_hint("cfghub reads one profile at a time: keep the rows of one profile_id")));
            }
        }
        first += rows;
    }
    Ok(())
}

fn is_unsigned(descr: &ColumnDescriptor) -> bool {
    match descr.logical_type_ref() {
        Some(LogicalType::Integer(int)) => !int.is_signed,
        _ => matches!(
            descr.converted_type(),
            parquet::basic::ConvertedType::UINT_8
                | parquet::basic::ConvertedType::UINT_16
                | parquet::basic::ConvertedType::UINT_32
                | parquet::basic::ConvertedType::UINT_64
        ),
    }
}

/// Whether the file's column can be read as the spec's kind.
fn check_type(table: &ReadTable, spec: &Spec, descr: &ColumnDescriptor) -> Result<()> {
    let physical = descr.physical_type();
    let fits = match spec.kind {
        Kind::U64 | Kind::U32 | Kind::I64 => matches!(physical, Physical::INT32 | Physical::INT64),
        Kind::F64 => {
            matches!(physical, Physical::DOUBLE | Physical::FLOAT | Physical::INT32 | Physical::INT64)
        }
        Kind::Bool => physical == Physical::BOOLEAN,
        Kind::Text => physical == Physical::BYTE_ARRAY,
    };
    if !fits || descr.max_rep_level() > 0 {
        return Err(table.error(
            spec.name,
            0,
            format!("expected {} ({}), found a column of {physical}", spec.kind.what(), spec.kind.sql()),
        ));
    }
    Ok(())
}

/// Nulls in a required column, negative values where a count belongs, text that is not UTF-8:
/// checked on the values read from `first` on.
fn check_values(
    table: &ReadTable,
    spec: &Spec,
    descr: &ColumnDescriptor,
    data: &Data,
    first: usize,
) -> Result<()> {
    let signed_source = !is_unsigned(descr);
    let null_at = |row: usize| table.error(spec.name, row, "null where a value is required");
    match data {
        Data::Int(v) => {
            for (row, x) in v.iter().enumerate().skip(first) {
                match x {
                    None if !spec.nullable => return Err(null_at(row)),
                    Some(x) if spec.kind != Kind::I64 && signed_source && (*x as i64) < 0 => {
                        return Err(table.error(spec.name, row, format!("{} is negative", *x as i64)))
                    }
                    Some(x) if spec.kind == Kind::U32 && *x > u64::from(u32::MAX) => {
                        return Err(table.error(spec.name, row, format!("{x} does not fit 32 bits")))
                    }
                    _ => {}
                }
            }
        }
        Data::Float(v) => {
            if let Some(row) = v.iter().skip(first).position(|x| x.is_none() && !spec.nullable) {
                return Err(null_at(first + row));
            }
        }
        Data::Bool(v) => {
            if let Some(row) = v.iter().skip(first).position(|x| x.is_none() && !spec.nullable) {
                return Err(null_at(first + row));
            }
        }
        Data::Text(v) => {
            if let Some(row) = v.iter().skip(first).position(|x| x.is_none() && !spec.nullable) {
                return Err(null_at(first + row));
            }
        }
    }
    Ok(())
}

const BATCH: usize = 64 * 1024;

/// Reads one column chunk to its end, appending to `data` (nulls where the definition level says).
fn read_column(
    column: ColumnReader,
    descr: &ColumnDescriptor,
    data: &mut Data,
) -> parquet::errors::Result<()> {
    let nullable = descr.max_def_level() > 0;
    let unsigned = is_unsigned(descr);
    macro_rules! drain {
        ($reader:expr, $out:expr, $conv:expr) => {{
            let mut r = $reader;
            let (mut defs, mut vals) = (Vec::new(), Vec::new());
            loop {
                defs.clear();
                vals.clear();
                let (records, _, _) =
                    r.read_records(BATCH, nullable.then_some(&mut defs), None, &mut vals)?;
                if records == 0 {
                    break;
                }
                if nullable {
                    let mut it = vals.drain(..);
                    for &d in &defs[..records] {
                        $out.push(if d > 0 { it.next().map($conv) } else { None });
                    }
                } else {
                    $out.extend(vals.drain(..).map(|v| Some($conv(v))));
                }
            }
        }};
    }
    match (column, data) {
        (ColumnReader::Int64ColumnReader(r), Data::Int(out)) => drain!(r, out, |v: i64| v as u64),
        (ColumnReader::Int32ColumnReader(r), Data::Int(out)) => {
            if unsigned {
                drain!(r, out, |v: i32| u64::from(v as u32))
            } else {
                drain!(r, out, |v: i32| i64::from(v) as u64)
            }
        }
        (ColumnReader::DoubleColumnReader(r), Data::Float(out)) => drain!(r, out, |v: f64| v),
        (ColumnReader::FloatColumnReader(r), Data::Float(out)) => drain!(r, out, |v: f32| f64::from(v)),
        (ColumnReader::Int64ColumnReader(r), Data::Float(out)) => {
            if unsigned {
                drain!(r, out, |v: i64| v as u64 as f64)
            } else {
                drain!(r, out, |v: i64| v as f64)
            }
        }
        (ColumnReader::Int32ColumnReader(r), Data::Float(out)) => drain!(r, out, |v: i32| f64::from(v)),
        (ColumnReader::BoolColumnReader(r), Data::Bool(out)) => drain!(r, out, |v: bool| v),
        (ColumnReader::ByteArrayColumnReader(r), Data::Text(out)) => {
            drain!(r, out, |v: ByteArray| String::from_utf8_lossy(v.data()).into_owned())
        }
        _ => {
            return Err(parquet::errors::ParquetError::General(format!(
                "column {} cannot be read as asked",
                descr.name()
            )))
        }
    }
    Ok(())
}
