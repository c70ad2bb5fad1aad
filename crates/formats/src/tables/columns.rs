//! Tables as columns, and their Parquet files: what the writer fills row by row and the reader
//! gets back, a batch of rows at a time.
//!
//! Parquet stores each column with a physical type (`INT32`, `INT64`, `DOUBLE`, `BOOLEAN`,
//! `BYTE_ARRAY`) and a logical type on top (`INTEGER(64,false)` for an unsigned 64-bit count,
//! `STRING` for text). A nullable (`OPTIONAL`) column stores its present values densely, beside a
//! definition level per row (1 present, 0 null); a `REQUIRED` one stores values alone.
//!
//! The writer keeps each column in that form as rows come (values in their physical type,
//! levels only for nullable columns) and writes a row group each [`GROUP`] rows, so that a
//! table never waits whole in memory. The reader streams too: it reads [`BATCH`] rows of every
//! column it needs at a time, and skips the columns that are derived from others.
//!
//! cfghub writes the types of [`Kind`]; it reads what other tools write back leniently: any
//! integer width, signed or not (a negative value where a count belongs is an error naming its
//! row), plain or dictionary-encoded strings, and the compressions DuckDB, pyarrow and Spark
//! write (snappy, zstd, gzip, lz4, or none).

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use parquet::basic::{Compression, Encoding, LogicalType, PageType, Type as Physical};
use parquet::column::page::{CompressedPage, Page, PageWriter};
use parquet::column::reader::ColumnReader;
use parquet::column::writer::{ColumnCloseResult, ColumnWriter};
use parquet::data_type::ByteArray;
use parquet::errors::ParquetError;
use parquet::file::metadata::{ColumnChunkMetaData, PageEncodingStats};
use parquet::file::page_index::offset_index::{OffsetIndexMetaData, PageLocation};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::statistics::Statistics;
use parquet::file::writer::{SerializedFileWriter, SerializedPageWriter, TrackedWrite};
use parquet::schema::types::{ColumnDescPtr, ColumnDescriptor};
use rustc_hash::FxHashMap;

use cfghub_model::error::{Error, Place, Result};

use super::schema::{Kind, Spec};

/// Rows per row group written: 64Ki (DuckDB writes 122,880). The writer holds a row group of
/// each table at once: 128Ki rows took 11 MB for the cost table of a DCPI profile beside its
/// 11 MB model (3.2x the 10 MB file), and 167 MB converting the 98 MB Pin-style DCFG; 64Ki take
/// 2.6x and 150 MB at the same CPU time, for 0.7% larger tables. Large enough that per-group
/// overhead (statistics, column chunk metadata) stays negligible.
pub const GROUP: usize = 1 << 16;

/// Bytes per data page written (Parquet's default is 1 MiB). Buffers of a page, while writing
/// and while reading, then stay below the size from which the allocator maps each allocation
/// apart ([`cfghub_model::mem::map_large_allocations_apart`]) and are reused instead of mapped,
/// faulted in and unmapped page after page; on the Pin-style DCFG the kernel's share of the time was a
/// quarter of reading.
const PAGE_BYTES: usize = 64 << 10;

/// Rows read from every column at a time: 64 KiB of text values (Parquet's `ByteArray`, 32
/// bytes each), below that size too. At 8Ki rows each text column's values took 256 KiB, mapped,
/// faulted in and unmapped for every batch: a third of the page faults of reading the Pin-style
/// DCFG's tables, and 0.80 -> 0.74 s CPU reading them at 2Ki.
pub(crate) const BATCH: usize = 1 << 11;

/// A column's present values in its Parquet physical type.
enum Values {
    I64(Vec<i64>),
    I32(Vec<i32>),
    Bool(Vec<bool>),
    Text(Vec<ByteArray>),
}

/// A column being written: its present values and, when nullable, a definition level per row.
struct Column {
    values: Values,
    defs: Vec<i16>,
    nullable: bool,
    #[cfg_attr(not(feature = "arrow"), allow(dead_code))]
    kind: Kind,
}

impl Column {
    fn new(spec: &Spec) -> Column {
        let values = match spec.kind {
            Kind::U64 | Kind::I64 => Values::I64(Vec::new()),
            Kind::U32 => Values::I32(Vec::new()),
            Kind::Bool => Values::Bool(Vec::new()),
            Kind::Text => Values::Text(Vec::new()),
        };
        Column { values, defs: Vec::new(), nullable: spec.nullable, kind: spec.kind }
    }

    /// Marks a row present or null; a null in a required column (never pushed by the writer)
    /// becomes the type's default, so that the file stays well formed.
    fn level(&mut self, present: bool) -> bool {
        if self.nullable {
            self.defs.push(i16::from(present));
            present
        } else {
            true
        }
    }

    /// The column's `rows` rows as an Arrow array.
    #[cfg(feature = "arrow")]
    fn arrow(&self, rows: usize) -> super::arrow::ArrayRef {
        let present = self.nullable.then(|| self.defs.iter().map(|&d| d == 1));
        match &self.values {
            Values::I64(v) => super::arrow::integers(self.kind, v, present, rows),
            Values::I32(v) => super::arrow::integers(self.kind, v, present, rows),
            Values::Bool(v) => super::arrow::booleans(v, present, rows),
            Values::Text(v) => super::arrow::texts(v.iter().map(|t| t.data()), present, rows),
        }
    }

    fn clear(&mut self) {
        self.defs.clear();
        match &mut self.values {
            Values::I64(v) => v.clear(),
            Values::I32(v) => v.clear(),
            Values::Bool(v) => v.clear(),
            Values::Text(v) => v.clear(),
        }
    }

    fn write(&self, writer: &mut ColumnWriter<'_>) -> parquet::errors::Result<()> {
        let defs = self.nullable.then_some(&self.defs[..]);
        match (writer, &self.values) {
            (ColumnWriter::Int64ColumnWriter(w), Values::I64(v)) => w.write_batch(v, defs, None),
            (ColumnWriter::Int32ColumnWriter(w), Values::I32(v)) => w.write_batch(v, defs, None),
            (ColumnWriter::BoolColumnWriter(w), Values::Bool(v)) => w.write_batch(v, defs, None),
            (ColumnWriter::ByteArrayColumnWriter(w), Values::Text(v)) => w.write_batch(v, defs, None),
            _ => return Err(ParquetError::General("a column does not match its schema".into())),
        }
        .map(drop)
    }
}

/// A table being written row by row, in the order of its schema, to `<dir>/<name>.parquet`;
/// [`Table::finish`] writes what is left and closes the file.
pub struct Table {
    pub name: &'static str,
    columns: Vec<Column>,
    /// The profile id every row carries as its first column.
    profile_id: ByteArray,
    /// Rows of the group being filled, and groups written.
    rows: usize,
    groups: usize,
    writer: Option<SerializedFileWriter<BufWriter<File>>>,
    /// Where the rows go when the table is made in memory as Arrow record batches.
    #[cfg(feature = "arrow")]
    batches: Option<super::arrow::Batches>,
    shown: String,
    /// The first error, kept until [`Table::finish`] so that rows can be pushed without checks.
    failed: Option<Error>,
}

/// A table finished: written to its file, or, made in memory, its Arrow record batches.
pub struct Finished {
    /// The table's Arrow schema and record batches, when it was made in memory.
    #[cfg(feature = "arrow")]
    pub batches: Option<super::arrow::Batches>,
}

impl Table {
    /// An empty table whose first column (`profile_id`) every row fills with `profile_id`,
    /// written to `path`.
    pub fn new(
        name: &'static str,
        specs: &'static [Spec],
        profile_id: &Arc<str>,
        path: PathBuf,
        compression: super::Compression,
    ) -> Table {
        let mut table = Table::empty(name, specs, profile_id, path.display().to_string());
        match open_writer(name, specs, &path, codec(compression)) {
            Ok(writer) => table.writer = Some(writer),
            Err(e) => table.failed = Some(e),
        }
        table
    }

    /// An empty table made in memory as Arrow record batches, a batch per row group.
    #[cfg(feature = "arrow")]
    pub fn in_memory(name: &'static str, specs: &'static [Spec], profile_id: &Arc<str>) -> Table {
        let table = Table::empty(name, specs, profile_id, name.to_string());
        Table { batches: Some(super::arrow::Batches::new(name, specs)), ..table }
    }

    /// A table of no rows going nowhere yet, named `shown` in messages.
    fn empty(name: &'static str, specs: &'static [Spec], profile_id: &Arc<str>, shown: String) -> Table {
        Table {
            name,
            columns: specs.iter().skip(1).map(Column::new).collect(),
            profile_id: ByteArray::from(profile_id.as_bytes().to_vec()),
            rows: 0,
            groups: 0,
            writer: None,
            #[cfg(feature = "arrow")]
            batches: None,
            shown,
            failed: None,
        }
    }

    /// Starts a row: push its values (after `profile_id`) in schema order.
    pub fn row(&mut self) -> Row<'_> {
        if self.rows == GROUP {
            self.flush();
        }
        self.rows += 1;
        Row { columns: &mut self.columns, next: 0 }
    }

    /// Writes the rows pushed so far as a row group.
    fn flush(&mut self) {
        #[cfg(feature = "arrow")]
        if let Some(batches) = self.batches.as_mut() {
            let columns = self.columns.iter().map(|c| c.arrow(self.rows)).collect();
            if let Err(e) = batches.push(&self.profile_id, self.rows, columns) {
                self.failed = Some(Error::input(format!("cannot make table {}: {e}", self.name)));
                self.batches = None;
            }
        }
        if let Some(writer) = self.writer.as_mut() {
            if let Err(e) = write_group(writer, &self.profile_id, self.rows, &self.columns) {
                self.failed = Some(Error::input(format!("cannot write table {}: {e}", self.name)));
                self.writer = None;
            }
        }
        self.columns.iter_mut().for_each(Column::clear);
        self.rows = 0;
        self.groups += 1;
    }

    /// Writes the last row group (an empty one for an empty table) and the file's footer.
    pub fn finish(mut self) -> Result<Finished> {
        if self.rows > 0 || self.groups == 0 {
            self.flush();
        }
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        #[cfg(feature = "arrow")]
        if let Some(batches) = self.batches.take() {
            return Ok(Finished { batches: Some(batches) });
        }
        let writer = self.writer.take().expect("open while nothing failed");
        let out = writer
            .into_inner()
            .map_err(|e| Error::input(format!("cannot write table {}: {e}", self.name)))?;
        out.into_inner().map_err(|e| Error::io(&self.shown, e.into_error()))?;
        Ok(Finished {
            #[cfg(feature = "arrow")]
            batches: None,
        })
    }
}

/// The Parquet codec of a compression.
fn codec(compression: super::Compression) -> Compression {
    use parquet::basic::{GzipLevel, ZstdLevel};
    match compression {
        super::Compression::Snappy => Compression::SNAPPY,
        super::Compression::Zstd => Compression::ZSTD(ZstdLevel::default()),
        super::Compression::Gzip => Compression::GZIP(GzipLevel::default()),
        super::Compression::Lz4 => Compression::LZ4_RAW,
        super::Compression::None => Compression::UNCOMPRESSED,
    }
}

fn open_writer(
    name: &str,
    specs: &[Spec],
    path: &Path,
    compression: Compression,
) -> Result<SerializedFileWriter<BufWriter<File>>> {
    let shown = path.display().to_string();
    let fail = |e: ParquetError| Error::input(format!("cannot write table {name}: {e}"));
    let schema = format!(
        "message {name} {{ {} }}",
        specs
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
    // The constant `profile_id` column is written by hand, snappy whatever the others use.
    let mut props = WriterProperties::builder()
        .set_compression(compression)
        .set_dictionary_enabled(false)
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_data_page_size_limit(PAGE_BYTES)
        .set_created_by(format!("cfghub {}", env!("CARGO_PKG_VERSION")));
    // Integer columns are mostly row numbers, ids, offsets and addresses that grow row by row,
    // or small numbers that repeat (process, image, thread): as differences from one row to
    // the next, bit-packed per block of 128 values (DELTA_BINARY_PACKED), they take a few bits
    // a row where the plain encoding takes 4 or 8 bytes that snappy shrinks by about 2. On the
    // Pin-style DCFG the tables take 11 MB instead of 50 MB, read in 0.31 s CPU instead of 0.35
    // and write in slightly less. DuckDB, pyarrow and Spark read the encoding.
    for s in specs.iter().filter(|s| matches!(s.kind, Kind::U64 | Kind::U32 | Kind::I64)) {
        props = props.set_column_encoding(s.name.into(), Encoding::DELTA_BINARY_PACKED);
    }
    // A call path's frame is a random 64-bit id (`ids`) that repeats over the tree's nodes: a
    // dictionary of the few thousand frames takes a dozen bits a row where the differences
    // take 64.
    if name == "stack_nodes" {
        props = props.set_column_dictionary_enabled("frame".into(), true);
    }
    // Text columns repeat a few values (kinds, paths, the profile id): a dictionary pays. Their
    // statistics cost a string comparison per row and prune nothing (every row group holds
    // every kind), except the profile id's, by which a glob over many profiles skips files
    // and the reader checks a folder holds one profile.
    for s in specs.iter().filter(|s| s.kind == Kind::Text) {
        props = props.set_column_dictionary_enabled(s.name.into(), true);
        if s.name != "profile_id" {
            props = props.set_column_statistics_enabled(s.name.into(), EnabledStatistics::None);
        }
    }
    let file = File::create(path).map_err(|e| Error::io(&shown, e))?;
    let out = BufWriter::with_capacity(1 << 20, file);
    SerializedFileWriter::new(out, schema, Arc::new(props.build())).map_err(fail)
}

/// One row group of `rows` rows: the profile id on every row, then every other column.
fn write_group(
    writer: &mut SerializedFileWriter<BufWriter<File>>,
    id: &ByteArray,
    rows: usize,
    columns: &[Column],
) -> parquet::errors::Result<()> {
    let id_column = writer.schema_descr().column(0);
    let mut group = writer.next_row_group()?;
    if rows > 0 {
        let (bytes, chunk) = constant_text_chunk(id_column, id, rows)?;
        group.append_column(&bytes, chunk)?;
    } else if let Some(mut column) = group.next_column()? {
        // An empty table: the crate's own (empty) chunk.
        match column.untyped() {
            ColumnWriter::ByteArrayColumnWriter(w) => w.write_batch(&[], None, None).map(drop)?,
            _ => return Err(ParquetError::General("profile_id is not text".into())),
        }
        column.close()?;
    }
    let mut index = 0;
    while let Some(mut column) = group.next_column()? {
        columns[index].write(column.untyped())?;
        column.close()?;
        index += 1;
    }
    group.close().map(drop)
}

/// The column chunk of a text column that holds `value` on each of its `rows` rows (`rows` >
/// 0), encoded as the crate encodes it, without a dictionary lookup per row: a dictionary page
/// of the one value (`PLAIN`: its length as 4 little-endian bytes, then its bytes) and a data
/// page of its indices (`RLE_DICTIONARY`: the indices' bit width, 0 for a dictionary of one
/// value, then one run of `rows` repeats: `rows << 1` as a ULEB128 varint and no value bytes,
/// since a value of 0 bits takes none). A required column has no definition levels. Each page
/// is snappy-compressed like the file's other pages. Returns the chunk's bytes and what the
/// row group needs to append them: offsets relative to the bytes, statistics (min = max =
/// `value`, no nulls) and the page locations.
fn constant_text_chunk(
    descr: ColumnDescPtr,
    value: &ByteArray,
    rows: usize,
) -> parquet::errors::Result<(Bytes, ColumnCloseResult)> {
    let too_many = || ParquetError::General(format!("{rows} rows do not fit a page"));
    let count = u32::try_from(rows).map_err(|_| too_many())?;
    let mut plain = Vec::with_capacity(4 + value.len());
    plain.extend_from_slice(&u32::try_from(value.len()).map_err(|_| too_many())?.to_le_bytes());
    plain.extend_from_slice(value.data());
    let mut indices = vec![0u8];
    let mut header = (rows as u64) << 1;
    loop {
        let byte = (header & 0x7f) as u8;
        header >>= 7;
        if header == 0 {
            indices.push(byte);
            break;
        }
        indices.push(byte | 0x80);
    }
    let snappy = |raw: &[u8]| {
        snap::raw::Encoder::new()
            .compress_vec(raw)
            .map(Bytes::from)
            .map_err(|e| ParquetError::External(Box::new(e)))
    };
    let dictionary = Page::DictionaryPage {
        buf: snappy(&plain)?,
        num_values: 1,
        encoding: Encoding::PLAIN,
        is_sorted: false,
    };
    let data = Page::DataPage {
        buf: snappy(&indices)?,
        num_values: count,
        encoding: Encoding::RLE_DICTIONARY,
        def_level_encoding: Encoding::RLE,
        rep_level_encoding: Encoding::RLE,
        statistics: None,
    };
    let mut sink = TrackedWrite::new(Vec::new());
    let mut pages = SerializedPageWriter::new(&mut sink);
    let dictionary = pages.write_page(CompressedPage::new(dictionary, plain.len()))?;
    let data = pages.write_page(CompressedPage::new(data, indices.len()))?;
    pages.close()?;
    let bytes = Bytes::from(sink.into_inner()?);
    let unencoded = (rows as i64).saturating_mul(value.len() as i64);
    let metadata = ColumnChunkMetaData::builder(descr)
        .set_compression(Compression::SNAPPY)
        .set_encodings(vec![Encoding::PLAIN, Encoding::RLE, Encoding::RLE_DICTIONARY])
        .set_total_compressed_size((dictionary.compressed_size + data.compressed_size) as i64)
        .set_total_uncompressed_size((dictionary.uncompressed_size + data.uncompressed_size) as i64)
        .set_num_values(rows as i64)
        .set_dictionary_page_offset(Some(dictionary.offset as i64))
        .set_data_page_offset(data.offset as i64)
        .set_statistics(Statistics::new(Some(value.clone()), Some(value.clone()), None, Some(0), false))
        .set_page_encoding_stats(vec![
            PageEncodingStats { page_type: PageType::DICTIONARY_PAGE, encoding: Encoding::PLAIN, count: 1 },
            PageEncodingStats {
                page_type: PageType::DATA_PAGE,
                encoding: Encoding::RLE_DICTIONARY,
                count: 1,
            },
        ])
        .set_unencoded_byte_array_data_bytes(Some(unencoded))
        .build()?;
    let offset_index = OffsetIndexMetaData {
        page_locations: vec![PageLocation {
            offset: data.offset as i64,
            compressed_page_size: data.compressed_size as i32,
            first_row_index: 0,
        }],
        unencoded_byte_array_data_bytes: Some(vec![unencoded]),
    };
    let close = ColumnCloseResult {
        bytes_written: bytes.len() as u64,
        rows_written: rows as u64,
        metadata,
        bloom_filter: None,
        column_index: None,
        offset_index: Some(offset_index),
    };
    Ok((bytes, close))
}

/// One row being pushed into a [`Table`].
pub struct Row<'a> {
    columns: &'a mut Vec<Column>,
    next: usize,
}

impl Row<'_> {
    fn column(&mut self) -> &mut Column {
        self.next += 1;
        &mut self.columns[self.next - 1]
    }

    /// An integer (unsigned, or a signed value's bits), or null.
    pub fn int(mut self, v: Option<u64>) -> Self {
        let c = self.column();
        let x = v.unwrap_or_default();
        if c.level(v.is_some()) {
            match &mut c.values {
                Values::I64(out) => out.push(x as i64),
                Values::I32(out) => out.push(x as u32 as i32),
                _ => unreachable!("integer pushed into another column"),
            }
        }
        self
    }
    pub fn u(self, v: u64) -> Self {
        self.int(Some(v))
    }
    pub fn b(mut self, v: Option<bool>) -> Self {
        let c = self.column();
        if c.level(v.is_some()) {
            match &mut c.values {
                Values::Bool(out) => out.push(v.unwrap_or_default()),
                _ => unreachable!("bool pushed into another column"),
            }
        }
        self
    }
    /// Text, or null. A value equal to the column's previous one shares its bytes.
    pub fn s(mut self, v: Option<&str>) -> Self {
        let c = self.column();
        if c.level(v.is_some()) {
            let v = v.unwrap_or_default().as_bytes();
            match &mut c.values {
                Values::Text(out) => {
                    let same = out.last().filter(|last| last.data() == v).cloned();
                    out.push(same.unwrap_or_else(|| ByteArray::from(v.to_vec())));
                }
                _ => unreachable!("text pushed into another column"),
            }
        }
        self
    }
    /// Text the program itself spells (a kind's name): no copy.
    pub fn k(mut self, v: &'static str) -> Self {
        let c = self.column();
        if c.level(true) {
            match &mut c.values {
                Values::Text(out) => out.push(ByteArray::from(Bytes::from_static(v.as_bytes()))),
                _ => unreachable!("text pushed into another column"),
            }
        }
        self
    }
}

/// A column of rows read back: a value per row (the type's default where null).
#[derive(Debug)]
enum Data {
    Int(Vec<u64>),
    Float(Vec<f64>),
    Bool(Vec<bool>),
    /// Text as codes into the batch's own list of distinct values.
    Text {
        codes: Vec<u32>,
        words: Vec<String>,
    },
}

impl Data {
    fn for_kind(kind: Kind) -> Data {
        match kind {
            Kind::U64 | Kind::U32 | Kind::I64 => Data::Int(Vec::new()),
            Kind::Bool => Data::Bool(Vec::new()),
            Kind::Text => Data::Text { codes: Vec::new(), words: Vec::new() },
        }
    }
}

/// A column read back: its values and, when some row is null, whether each row has one.
#[derive(Debug)]
struct ReadColumn {
    name: &'static str,
    data: Data,
    present: Option<Vec<bool>>,
}

impl ReadColumn {
    /// `n` nulls: a column the file does not have.
    fn nulls(name: &'static str, kind: Kind, n: usize) -> ReadColumn {
        let data = match Data::for_kind(kind) {
            Data::Int(_) => Data::Int(vec![0; n]),
            Data::Float(_) => Data::Float(vec![0.0; n]),
            Data::Bool(_) => Data::Bool(vec![false; n]),
            Data::Text { .. } => Data::Text { codes: vec![0; n], words: vec![String::new()] },
        };
        ReadColumn { name, data, present: Some(vec![false; n]) }
    }

    fn len(&self) -> usize {
        match &self.data {
            Data::Int(v) => v.len(),
            Data::Float(v) => v.len(),
            Data::Bool(v) => v.len(),
            Data::Text { codes, .. } => codes.len(),
        }
    }

    /// Appends `other`, a later batch of the same column.
    fn append(&mut self, other: ReadColumn) {
        let before = self.len();
        match (&mut self.data, other.data) {
            (Data::Int(a), Data::Int(b)) => a.extend(b),
            (Data::Float(a), Data::Float(b)) => a.extend(b),
            (Data::Bool(a), Data::Bool(b)) => a.extend(b),
            (Data::Text { codes, words }, Data::Text { codes: more, words: theirs }) => {
                let mut index: HashMap<String, u32> =
                    words.iter().enumerate().map(|(k, w)| (w.clone(), k as u32)).collect();
                let map: Vec<u32> = theirs
                    .into_iter()
                    .map(|w| {
                        let next = words.len() as u32;
                        *index.entry(w.clone()).or_insert_with(|| {
                            words.push(w);
                            next
                        })
                    })
                    .collect();
                // A null row's code (0) may name no word.
                codes.extend(more.into_iter().map(|c| map.get(c as usize).copied().unwrap_or(0)));
            }
            _ => unreachable!("batches of one column have one type"),
        }
        let after = self.len();
        match (&mut self.present, other.present) {
            (None, None) => {}
            (Some(a), None) => a.resize(after, true),
            (a, b) => {
                let mut mine = a.take().unwrap_or_else(|| vec![true; before]);
                mine.extend(b.unwrap_or_else(|| vec![true; after - before]));
                *a = Some(mine);
            }
        }
    }
}

/// The values of an integer, float or boolean column for the rows of a [`ReadTable`], indexed
/// by row number in the whole table.
#[derive(Clone, Copy)]
pub(crate) struct Col<'a, T> {
    first: usize,
    values: &'a [T],
    present: Option<&'a [bool]>,
}

impl<T: Copy> Col<'_, T> {
    /// The value of `row`, `None` when null.
    #[inline]
    pub fn get(&self, row: usize) -> Option<T> {
        let i = row - self.first;
        match self.present {
            Some(p) if !p[i] => None,
            _ => Some(self.values[i]),
        }
    }

    /// The value of `row` of a column the reader checked holds no null.
    #[inline]
    pub fn at(&self, row: usize) -> T {
        self.values[row - self.first]
    }
}

/// The values of a text column for the rows of a [`ReadTable`].
#[derive(Clone, Copy)]
pub(crate) struct Texts<'a> {
    first: usize,
    codes: &'a [u32],
    words: &'a [String],
    present: Option<&'a [bool]>,
}

impl<'a> Texts<'a> {
    /// The position of `row`'s text among [`Texts::words`], `None` when null.
    #[inline]
    pub fn code(&self, row: usize) -> Option<usize> {
        let i = row - self.first;
        match self.present {
            Some(p) if !p[i] => None,
            _ => Some(self.codes[i] as usize),
        }
    }

    /// The distinct texts of the batch.
    pub fn words(&self) -> &'a [String] {
        self.words
    }

    /// The text of `row`, `None` when null.
    #[inline]
    pub fn get(&self, row: usize) -> Option<&'a str> {
        let i = row - self.first;
        match self.present {
            Some(p) if !p[i] => None,
            _ => Some(&self.words[self.codes[i] as usize]),
        }
    }
}

/// Rows read back from a table: a batch of consecutive rows (or all of them) of the columns the
/// reader asked for, addressed by their row number in the whole table.
pub(crate) struct ReadTable {
    pub name: &'static str,
    /// The file it was read from, for error messages.
    pub file: Arc<str>,
    /// The rows of the whole table.
    pub rows: usize,
    first: usize,
    len: usize,
    columns: Vec<ReadColumn>,
}

impl ReadTable {
    /// The row numbers this batch holds.
    pub fn range(&self) -> std::ops::Range<usize> {
        self.first..self.first + self.len
    }

    fn column(&self, name: &str) -> &ReadColumn {
        self.columns.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("column {name} not read"))
    }

    /// An integer column's values.
    pub(crate) fn ints(&self, name: &str) -> Col<'_, u64> {
        let c = self.column(name);
        match &c.data {
            Data::Int(v) => Col { first: self.first, values: v, present: c.present.as_deref() },
            _ => unreachable!("{name} is not an integer column"),
        }
    }
    pub(crate) fn bools(&self, name: &str) -> Col<'_, bool> {
        let c = self.column(name);
        match &c.data {
            Data::Bool(v) => Col { first: self.first, values: v, present: c.present.as_deref() },
            _ => unreachable!("{name} is not a boolean column"),
        }
    }
    pub fn texts(&self, name: &str) -> Texts<'_> {
        let c = self.column(name);
        match &c.data {
            Data::Text { codes, words } => {
                Texts { first: self.first, codes, words, present: c.present.as_deref() }
            }
            _ => unreachable!("{name} is not a text column"),
        }
    }

    /// An error about one value of this table.
    pub fn error(&self, column: &str, row: usize, message: impl Into<String>) -> Error {
        table_error(self.name, &self.file, column, row, message)
    }

    /// A required integer (the reader checked it is not null).
    pub fn int(&self, name: &str, row: usize) -> u64 {
        self.ints(name).at(row)
    }

    /// An optional integer that must fit 32 bits.
    pub(crate) fn opt_u32(&self, name: &str, row: usize) -> Result<Option<u32>> {
        match self.ints(name).get(row) {
            None => Ok(None),
            Some(v) => u32::try_from(v)
                .map(Some)
                .map_err(|_| self.error(name, row, format!("{v} does not fit 32 bits"))),
        }
    }
}

fn table_error(name: &str, file: &str, column: &str, row: usize, message: impl Into<String>) -> Error {
    Error::input(message).in_file(file).at(Place::Path(format!("table {name}, column {column}, row {row}")))
}

/// A table's file opened for reading: its columns checked against the schema, read a batch at
/// a time with [`TableReader::next`] (or whole with [`TableReader::all`]).
pub(crate) struct TableReader {
    pub name: &'static str,
    pub file: Arc<str>,
    /// The rows of the whole table, as its row groups state them.
    pub rows: usize,
    /// The file's size in bytes: bounds what may be reserved for its rows.
    pub bytes: u64,
    reader: SerializedFileReader<File>,
    /// The columns read (derived ones are not): their spec and position in the file.
    /// The columns read, each with its index in the file (`None`: absent, read as nulls).
    wanted: Vec<(Spec, Option<usize>)>,
    /// The next row group, the readers of the open one and its rows not read yet.
    next_group: usize,
    open: Vec<ColumnReader>,
    left: usize,
    /// The row number of the next batch's first row.
    first: usize,
}

/// The file name of `path`, for messages.
fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// Opens table `name` at `path` and checks it has the columns of `specs`, each of a type that
/// converts to its kind; columns it has beyond those are ignored, and derived ones are checked
/// but not read. With `profile_id`, the first column (`profile_id`) is checked to hold that id
/// on every row (from the row groups' statistics where they say) rather than read.
pub(crate) fn open_table(
    path: &Path,
    name: &'static str,
    specs: &'static [Spec],
    profile_id: Option<&str>,
) -> Result<TableReader> {
    let shown = path.display().to_string();
    // Only a regular file is a table: opening a FIFO would wait for a writer forever.
    if let Ok(meta) = std::fs::metadata(path) {
        if !meta.is_file() {
            let what =
                if meta.is_dir() { "a folder" } else { "not a regular file (a FIFO, socket or device)" };
            return Err(Error::input(format!("table {name}: {} is {what}", file_name(path))).in_file(&shown));
        }
        cfghub_model::io::note_read(path, &meta);
    }
    let file = File::open(path).map_err(|e| {
        let missing = e.kind() == std::io::ErrorKind::NotFound;
        let err = Error::io(&shown, e);
        if missing {
            Error::input(format!("table {name} is missing: there is no {}", file_name(path)))
                .in_file(&shown)
                .with_hint(
                    "a tables folder holds every table cfghub writes; copy the ones you did not change",
                )
        } else {
            err
        }
    })?;
    let bad = |e: ParquetError| {
        Error::input(format!("table {name} is not a readable Parquet file: {e}")).in_file(&shown)
    };
    let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
    let reader = SerializedFileReader::new(file).map_err(bad)?;
    let schema = reader.metadata().file_metadata().schema_descr_ptr();
    // The row groups' rows, which the columns are read by (the footer's total is not checked
    // against them by the Parquet reader, and a table of 10^12 rows says nothing of memory).
    let rows = reader
        .metadata()
        .row_groups()
        .iter()
        .map(|g| usize::try_from(g.num_rows().max(0)).unwrap_or(usize::MAX))
        .fold(0usize, usize::saturating_add);
    let mut table = TableReader {
        name,
        file: Arc::from(shown.as_str()),
        rows,
        bytes,
        reader,
        wanted: Vec::new(),
        next_group: 0,
        open: Vec::new(),
        left: 0,
        first: 0,
    };
    for spec in specs {
        let Some(index) = schema.columns().iter().position(|c| c.path().parts() == [spec.name]) else {
            if spec.may_be_absent {
                table.wanted.push((*spec, None));
                continue;
            }
            return Err(table.error(spec.name, 0, format!("table {name} has no column {}", spec.name)));
        };
        check_type(&table, spec, &schema.column(index))?;
        if let (Some(id), "profile_id") = (profile_id, spec.name) {
            table.check_profile_id(index, spec, id)?;
        } else if !spec.derived {
            table.wanted.push((*spec, Some(index)));
        }
    }
    Ok(table)
}

impl TableReader {
    fn error(&self, column: &str, row: usize, message: impl Into<String>) -> Error {
        table_error(self.name, &self.file, column, row, message)
    }

    fn bad(&self, e: ParquetError) -> Error {
        Error::input(format!("table {} is not a readable Parquet file: {e}", self.name)).in_file(&*self.file)
    }

    /// The next batch of rows, `None` after the last.
    pub fn next(&mut self) -> Result<Option<ReadTable>> {
        while self.left == 0 {
            if self.next_group >= self.reader.num_row_groups() {
                return Ok(None);
            }
            let g = self.next_group;
            self.next_group += 1;
            let group = self.reader.get_row_group(g).map_err(|e| self.bad(e))?;
            self.left = usize::try_from(group.metadata().num_rows().max(0)).unwrap_or(usize::MAX);
            let open: std::result::Result<Vec<ColumnReader>, ParquetError> = self
                .wanted
                .iter()
                .filter_map(|&(_, index)| index)
                .map(|index| group.get_column_reader(index))
                .collect();
            drop(group);
            self.open = open.map_err(|e| self.bad(e))?;
        }
        let n = self.left.min(BATCH);
        let schema = self.reader.metadata().file_metadata().schema_descr_ptr();
        let mut columns = Vec::with_capacity(self.wanted.len());
        let mut k = 0;
        for &(spec, index) in &self.wanted {
            let Some(index) = index else {
                columns.push(ReadColumn::nulls(spec.name, spec.kind, n));
                continue;
            };
            let descr = schema.column(index);
            let column = read_batch(&mut self.open[k], &descr, spec.kind, n).map_err(|e| self.bad(e))?;
            k += 1;
            if column.len() != n {
                return Err(self.error(
                    spec.name,
                    self.first + column.len(),
                    format!("the column ends before the table's {} rows", self.rows),
                ));
            }
            let mut column = ReadColumn { name: spec.name, ..column };
            check_values(self, &spec, &descr, &mut column, self.first)?;
            columns.push(column);
        }
        let batch = ReadTable {
            name: self.name,
            file: self.file.clone(),
            rows: self.rows,
            first: self.first,
            len: n,
            columns,
        };
        self.first += n;
        self.left -= n;
        Ok(Some(batch))
    }

    /// Every row (for the small tables).
    pub fn all(&mut self) -> Result<ReadTable> {
        let mut whole = ReadTable {
            name: self.name,
            file: self.file.clone(),
            rows: self.rows,
            first: self.first,
            len: 0,
            columns: self
                .wanted
                .iter()
                .map(|(s, _)| ReadColumn { name: s.name, data: Data::for_kind(s.kind), present: None })
                .collect(),
        };
        while let Some(batch) = self.next()? {
            whole.len += batch.len;
            for (mine, theirs) in whole.columns.iter_mut().zip(batch.columns) {
                mine.append(theirs);
            }
        }
        whole.rows = whole.len;
        Ok(whole)
    }

    /// Every row of column `index` holds `id`: the statistics of each row group say so, or the
    /// values read show it.
    fn check_profile_id(&self, index: usize, spec: &Spec, id: &str) -> Result<()> {
        let mut first = 0usize;
        let schema = self.reader.metadata().file_metadata().schema_descr_ptr();
        let descr = schema.column(index);
        for g in 0..self.reader.num_row_groups() {
            let meta = self.reader.metadata().row_group(g);
            let rows = usize::try_from(meta.num_rows().max(0)).unwrap_or(usize::MAX);
            let stats = meta.column(index).statistics();
            let same = stats.is_some_and(|s| {
                s.min_bytes_opt() == Some(id.as_bytes())
                    && s.max_bytes_opt() == Some(id.as_bytes())
                    && s.null_count_opt() == Some(0)
            });
            if !same {
                let mut column = self
                    .reader
                    .get_row_group(g)
                    .and_then(|r| r.get_column_reader(index))
                    .map_err(|e| self.bad(e))?;
                let mut row = first;
                loop {
                    let batch = read_batch(&mut column, &descr, spec.kind, BATCH).map_err(|e| self.bad(e))?;
                    let n = batch.len();
                    if n == 0 {
                        break;
                    }
                    let Data::Text { codes, words } = &batch.data else { unreachable!("profile_id is text") };
                    for (k, &code) in codes.iter().enumerate() {
                        let present = batch.present.as_ref().is_none_or(|p| p[k]);
                        let found = &words[code as usize];
                        if !present || found != id {
                            let found = if present { found.as_str() } else { "null" };
                            return Err(self
                                .error(
                                    "profile_id",
                                    row + k,
                                    format!("a row of profile {found:?} among the tables of {id:?}"),
                                )
                                .with_hint(
                                    "cfghub reads one profile at a time: keep the rows of one profile_id",
                                ));
                        }
                    }
                    row += n;
                }
            }
            first += rows;
        }
        Ok(())
    }
}

/// Whether an integer column holds whole numbers as a `DECIMAL` of scale 0 in fixed-length
/// big-endian bytes: how Spark writes the unsigned 64-bit columns it read (`DECIMAL(20,0)`,
/// having no unsigned integers). The reader converts and checks its values itself, so that
/// they are taken as unsigned afterwards ([`is_unsigned`]).
fn is_whole_decimal(descr: &ColumnDescriptor) -> bool {
    let scale_zero = match descr.logical_type_ref() {
        Some(LogicalType::Decimal(decimal)) => decimal.scale == 0,
        _ => descr.converted_type() == parquet::basic::ConvertedType::DECIMAL && descr.type_scale() == 0,
    };
    scale_zero && descr.physical_type() == Physical::FIXED_LEN_BYTE_ARRAY && descr.type_length() <= 16
}

fn is_unsigned(descr: &ColumnDescriptor) -> bool {
    if is_whole_decimal(descr) {
        return true;
    }
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
fn check_type(table: &TableReader, spec: &Spec, descr: &ColumnDescriptor) -> Result<()> {
    let physical = descr.physical_type();
    let fits = match spec.kind {
        Kind::U64 | Kind::U32 => {
            matches!(physical, Physical::INT32 | Physical::INT64) || is_whole_decimal(descr)
        }
        // A value column may come as floating point: DuckDB writes a sum of BIGINTs (a HUGEINT)
        // to Parquet as DOUBLE. Its values must still be exact integers.
        Kind::I64 => {
            matches!(physical, Physical::INT32 | Physical::INT64 | Physical::DOUBLE | Physical::FLOAT)
                || is_whole_decimal(descr)
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

/// Nulls in a required column, negative values where a count belongs, values past 32 bits in a
/// 32-bit column: checked on a batch whose first row is `first`.
fn check_values(
    table: &TableReader,
    spec: &Spec,
    descr: &ColumnDescriptor,
    column: &mut ReadColumn,
    first: usize,
) -> Result<()> {
    // Floating point where an integer belongs: exact integers only, then held as integers.
    if let Data::Float(v) = &column.data {
        let exact =
            |x: f64| x.fract() == 0.0 && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&x);
        if let Some(row) = v.iter().position(|&x| !exact(x)) {
            return Err(table
                .error(
                    spec.name,
                    first + row,
                    format!("{} is not an integer a signed 64-bit column holds", v[row]),
                )
                .with_hint("cast the column to BIGINT in the query that wrote it (sum(value)::BIGINT)"));
        }
        column.data = Data::Int(v.iter().map(|&x| x as i64 as u64).collect());
    }
    if let (false, Some(present)) = (spec.nullable, &column.present) {
        if let Some(row) = present.iter().position(|&p| !p) {
            return Err(table.error(spec.name, first + row, "null where a value is required"));
        }
    }
    if let Data::Int(v) = &column.data {
        let signed_source = !is_unsigned(descr);
        let limit = match spec.kind {
            Kind::U32 => u64::from(u32::MAX),
            _ => u64::MAX,
        };
        let negative = spec.kind != Kind::I64 && signed_source;
        let wrong = |x: u64| (negative && (x as i64) < 0) || x > limit;
        if let Some(row) = v.iter().position(|&x| wrong(x)) {
            let x = v[row];
            let message = if negative && (x as i64) < 0 {
                format!("{} is negative", x as i64)
            } else {
                format!("{x} does not fit 32 bits")
            };
            return Err(table.error(spec.name, first + row, message));
        }
    }
    Ok(())
}

/// Up to `n` rows of one column, converted to `kind`.
fn read_batch(
    column: &mut ColumnReader,
    descr: &ColumnDescriptor,
    kind: Kind,
    n: usize,
) -> parquet::errors::Result<ReadColumn> {
    let nullable = descr.max_def_level() > 0;
    let unsigned = is_unsigned(descr);
    let mut defs: Vec<i16> = Vec::new();
    let mut present: Vec<bool> = Vec::new();
    let target = match descr.physical_type() {
        Physical::DOUBLE | Physical::FLOAT => Data::Float(Vec::new()),
        _ => Data::for_kind(kind),
    };
    // Reads the batch's levels and dense values, then spreads the values over the rows.
    macro_rules! spread {
        ($reader:expr, $ty:ty, $out:expr, $conv:expr) => {{
            let mut dense: Vec<$ty> = Vec::with_capacity(n);
            $reader.read_records(n, nullable.then_some(&mut defs), None, &mut dense)?;
            #[allow(unused_mut)]
            let mut conv = $conv;
            if nullable {
                $out.reserve(defs.len());
                present.reserve(defs.len());
                let mut values = dense.into_iter();
                for &d in &defs {
                    let value = if d > 0 { values.next() } else { None };
                    present.push(value.is_some());
                    $out.push(value.map(&mut conv).unwrap_or_default());
                }
            } else {
                $out.extend(dense.into_iter().map(conv));
            }
        }};
    }
    let data = match (column, target) {
        (ColumnReader::Int64ColumnReader(r), Data::Int(mut out)) => {
            spread!(r, i64, out, |v: i64| v as u64);
            Data::Int(out)
        }
        (ColumnReader::Int32ColumnReader(r), Data::Int(mut out)) => {
            if unsigned {
                spread!(r, i32, out, |v: i32| u64::from(v as u32))
            } else {
                spread!(r, i32, out, |v: i32| i64::from(v) as u64)
            }
            Data::Int(out)
        }
        (ColumnReader::DoubleColumnReader(r), Data::Float(mut out)) => {
            spread!(r, f64, out, |v: f64| v);
            Data::Float(out)
        }
        (ColumnReader::FloatColumnReader(r), Data::Float(mut out)) => {
            spread!(r, f32, out, f64::from);
            Data::Float(out)
        }
        (ColumnReader::Int64ColumnReader(r), Data::Float(mut out)) => {
            if unsigned {
                spread!(r, i64, out, |v: i64| v as u64 as f64)
            } else {
                spread!(r, i64, out, |v: i64| v as f64)
            }
            Data::Float(out)
        }
        (ColumnReader::Int32ColumnReader(r), Data::Float(mut out)) => {
            spread!(r, i32, out, f64::from);
            Data::Float(out)
        }
        (ColumnReader::FixedLenByteArrayColumnReader(r), Data::Int(mut out)) => {
            // Whole decimals (`is_whole_decimal`): a count or address must be 0 to 2^64 - 1, a
            // signed value fit 64 bits; nothing is rounded or wrapped.
            let mut wrong: Option<String> = None;
            let signed = kind == Kind::I64;
            let convert = |v: parquet::data_type::FixedLenByteArray| -> u64 {
                let bytes = v.data();
                let fill = if bytes.first().is_some_and(|b| b & 0x80 != 0) { 0xff } else { 0 };
                let mut wide = [fill; 16];
                wide[16 - bytes.len().min(16)..].copy_from_slice(&bytes[bytes.len().saturating_sub(16)..]);
                let x = i128::from_be_bytes(wide);
                let fits = if signed { i64::try_from(x).is_ok() } else { u64::try_from(x).is_ok() };
                if !fits && wrong.is_none() {
                    wrong = Some(if x < 0 && !signed {
                        format!("{x} is negative")
                    } else {
                        format!("{x} does not fit 64 bits")
                    });
                }
                if signed {
                    x as i64 as u64
                } else {
                    x as u64
                }
            };
            spread!(r, parquet::data_type::FixedLenByteArray, out, convert);
            if let Some(message) = wrong {
                return Err(ParquetError::General(format!("column {}: {message}", descr.name())));
            }
            Data::Int(out)
        }
        (ColumnReader::BoolColumnReader(r), Data::Bool(mut out)) => {
            spread!(r, bool, out, |v: bool| v);
            Data::Bool(out)
        }
        (ColumnReader::ByteArrayColumnReader(r), Data::Text { .. }) => {
            // Each distinct value once: most text columns repeat a few kinds or names.
            let mut words: Vec<String> = Vec::new();
            let mut index: FxHashMap<Vec<u8>, u32> = FxHashMap::default();
            let mut codes: Vec<u32> = Vec::new();
            let mut code = |v: ByteArray| -> u32 {
                let bytes = v.data();
                if let Some(&c) = index.get(bytes) {
                    return c;
                }
                let c = words.len() as u32;
                words.push(String::from_utf8_lossy(bytes).into_owned());
                index.insert(bytes.to_vec(), c);
                c
            };
            spread!(r, ByteArray, codes, &mut code);
            Data::Text { codes, words }
        }
        (_, _) => {
            return Err(ParquetError::General(format!("column {} cannot be read as asked", descr.name())))
        }
    };
    let present = (nullable && present.contains(&false)).then_some(present);
    Ok(ReadColumn { name: "", data, present })
}
