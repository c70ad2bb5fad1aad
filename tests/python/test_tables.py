"""Tables as Spark writes them back read exactly: Spark has no unsigned integers, so a table it
read and wrote again has its 32-bit unsigned columns as BIGINT and its 64-bit ones as
DECIMAL(20,0). cfghub reads such a folder as the one it wrote, and refuses a value that does
not fit its column, naming it."""
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import cfghub
from conftest import FIXTURES


def as_spark_writes(table):
    """`table` with Spark's types: uint32 -> int64, uint64 -> decimal(20,0)."""
    fields, columns = [], []
    for field, column in zip(table.schema, table.columns):
        if pa.types.is_uint64(field.type):
            field, column = field.with_type(pa.decimal128(20, 0)), column.cast(pa.decimal128(20, 0))
        elif pa.types.is_uint32(field.type):
            field, column = field.with_type(pa.int64()), column.cast(pa.int64())
        fields.append(field)
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


@pytest.mark.parametrize(
    "path", [FIXTURES / "perf-data/two-events.perf.data", FIXTURES / "dcfg/hello-world.dcfg.json"]
)
def test_a_folder_with_sparks_types_reads_as_the_one_written(path, tmp_path):
    tables = cfghub.read(path, quiet=True).tables(profile_id="p")
    as_written, as_spark = tmp_path / "written.tables", tmp_path / "spark.tables"
    for folder, change in [(as_written, lambda t: t), (as_spark, as_spark_writes)]:
        folder.mkdir()
        for name, table in tables.items():
            pq.write_table(change(table), folder / f"{name}.parquet")
    assert pa.types.is_decimal(pq.read_schema(as_spark / "images.parquet").field("load_addr").type)
    assert cfghub.read(as_spark).tables(profile_id="p") == cfghub.read(as_written).tables(profile_id="p")


def test_a_decimal_past_64_bits_or_negative_where_a_count_belongs_is_refused(tmp_path):
    tables = cfghub.read(FIXTURES / "dcfg/hello-world.dcfg.json").tables(profile_id="p")
    for value, what in [(2**64, "does not fit 64 bits"), (-1, "is negative")]:
        folder = tmp_path / f"{value}.tables"
        folder.mkdir()
        for name, table in tables.items():
            pq.write_table(as_spark_writes(table), folder / f"{name}.parquet")
        blocks = as_spark_writes(tables["blocks"])
        column = blocks.schema.get_field_index("count")
        counts = blocks["count"].to_pylist()
        counts[3] = value
        blocks = blocks.set_column(column, "count", pa.array(counts, pa.decimal128(20, 0)))
        pq.write_table(blocks, folder / "blocks.parquet")
        with pytest.raises(cfghub.InputError) as e:
            cfghub.read(folder)
        assert what in str(e.value) and "count" in str(e.value) and "blocks" in str(e.value)
