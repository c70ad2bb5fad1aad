"""A fleet's profiles converted, labelled and aggregated on Apache Spark with cfghub's Python
module: every input is read and turned into tables in Spark's executors, the tables are written
as a fleet (Hive-partitioned Parquet, the layout `cfghub convert --fleet` writes), then queried.

    spark-submit examples/spark/fleet.py INPUTS OUT [options]
    python examples/spark/fleet.py INPUTS OUT --master 'local[2]' [options]   (pyspark from pip)

INPUTS is a folder (read at any depth) or a glob, local or on an object store (s3a://...), of
profiles in any formats cfghub reads, mixed. OUT receives the fleet's stack tables:

    OUT/samples/service=web/part-....parquet     a row per call path, thread, event and profile
    OUT/sample_labels/service=web/part-....parquet   the samples' other labels
    OUT/stack_nodes/part-....parquet  OUT/frames/part-....parquet   the call tree, once
    OUT/events/part-....parquet

which DuckDB and Spark query (the job prints the top functions and the total per label) and
cfghub reads back as one merged profile: `cfghub convert OUT --from tables -o all.pb.gz`.

Options:
  --label-from-path PATTERN   labels from each input's path, as cfghub's --label-from-path
                              ('{service}/{host}.pb.gz': fields matched against the path's end);
                              default '{service}/{host}'
  --partition-by KEYS         label keys (comma-separated) that partition the samples; default
                              the first field of the pattern
  --master URL                Spark's master when run with plain python (spark-submit's own
                              --master otherwise); default local[*]
  --top N                     functions listed (default 20)
  --json                      print the answers as JSON

On a cluster the module must be installed on every executor (`pip install ./python` into the
executors' environment, or a wheel shipped with --py-files/--archives).
"""
import argparse
import json
import os
import sys
import time

import pyarrow as pa
import pyarrow.compute as pc

# The stack tables a fleet is made of, and, per table, the columns that go into the fleet (all
# the columns cfghub writes; names as in docs/formats/tables.md).
TABLES = ["samples", "sample_labels", "stack_nodes", "frames", "events"]
# Tables with a row per sample, partitioned like the samples; the rest are the call tree's, the
# same node in two profiles the same row, kept once.
PER_SAMPLE = {"samples", "sample_labels"}
TREE_KEYS = {"stack_nodes": ["node"], "frames": ["frame"]}
# Rows of a record batch handed to Spark: bounds what a task holds at once in the JVM.
ROWS_PER_BATCH = 1 << 16


def spark_type_of_arrow(arrow_type):
    """The Spark type of a column in the Arrow types Spark takes (`spark_arrow_type`)."""
    from pyspark.sql import types as T

    if pa.types.is_decimal(arrow_type):
        return T.DecimalType(arrow_type.precision, arrow_type.scale)
    if pa.types.is_integer(arrow_type):
        return T.LongType()
    if pa.types.is_boolean(arrow_type):
        return T.BooleanType()
    return T.StringType()


def spark_arrow_type(arrow_type):
    """The Arrow type a column of cfghub's tables takes in Spark, which has no unsigned
    integers: 32-bit ones widen to 64 bits, 64-bit ones (addresses) become DECIMAL(20,0), both
    exact."""
    if pa.types.is_uint64(arrow_type):
        return pa.decimal128(20, 0)
    if pa.types.is_integer(arrow_type):
        return pa.int64()
    return arrow_type


def table_schemas():
    """Each stack table's Arrow schema, from a tiny profile converted by the module."""
    import cfghub

    tables = cfghub.read(b"main;f 1\n", name="schema.folded", quiet=True).tables()
    return {name: tables[name].schema for name in TABLES}


def output_schema(schema, name, keys):
    """The Arrow schema of table `name`'s rows as the job hands them to Spark: its columns in
    Spark's types, and the partition labels of the samples' tables."""
    fields = [pa.field(f.name, spark_arrow_type(f.type), f.nullable) for f in schema]
    if name in PER_SAMPLE:
        fields += [pa.field(k, pa.string()) for k in keys]
    return pa.schema(fields)


def label_of_rows(rows, labels, key):
    """The value of label `key` of the sample each row of `rows` is on (its `process` and
    `sample`), null where it has none; `labels` is the profile's sample_labels table."""
    mine = labels.filter(pc.equal(labels["key"], key)).select(["process", "sample", "value"])
    mine = mine.rename_columns(["process", "sample", "label_value"])
    numbered = rows.select(["process", "sample"]).append_column("row", pa.array(range(rows.num_rows)))
    joined = numbered.join(mine, ["process", "sample"], join_type="left outer").sort_by("row")
    return joined["label_value"]


def profile_id(path):
    """A profile's id: its path below the inputs' common root is not known to an executor, so
    the file name up to its first dot, prefixed by its folder (two hosts of one name in two
    services stay apart)."""
    parts = path.rstrip("/").split("/")
    stem = parts[-1].split(".")[0] or parts[-1]
    return f"{parts[-2]}/{stem}" if len(parts) > 1 else stem


def distinct(table, key):
    """The first row of `table` of each value of `key` (hashed: the distinct keys, then the
    first row of each)."""
    ids = table[key].combine_chunks()
    return table.take(pc.index_in(pc.unique(ids), value_set=ids))


def table_in_executor(batches, name, schema, pattern, keys):
    """mapInArrow's function for table `name`: each input file (path, content) read by cfghub,
    and that table of it as record batches of `schema` (`output_schema`). A node or frame of the
    call tree goes out once per task, at its end: the hosts of a fleet share most of their paths
    (the job keeps each id once over all tasks)."""
    import cfghub

    wanted = [name, "sample_labels"] if name in PER_SAMPLE else [name]
    kept, seen = [], None
    for batch in batches:
        paths = batch.column("path").to_pylist()
        contents = batch.column("content")
        for i, path in enumerate(paths):
            local = path[len("file:"):] if path.startswith("file:") else path
            profile = cfghub.read(contents[i].as_buffer(), name=local, quiet=True, label_from_path=pattern)
            tables = profile.tables(profile_id=profile_id(local), only=wanted)
            table = tables[name]
            if name == "sample_labels" and keys:
                # A partition key's labels are the partition folders' names, as cfghub writes.
                table = table.filter(pc.invert(pc.is_in(table["key"], pa.array(keys))))
            columns = [table[f.name].cast(spark_arrow_type(f.type)) for f in table.schema]
            if name in PER_SAMPLE:
                columns += [label_of_rows(table, tables["sample_labels"], k) for k in keys]
            table = pa.Table.from_arrays(columns, schema=schema)
            if name in TREE_KEYS:
                # Only what the task has not met yet is kept, each id once.
                key = TREE_KEYS[name][0]
                if seen is not None:
                    table = table.filter(pc.invert(pc.is_in(table[key], value_set=seen)))
                table = distinct(table, key)
                kept.append(table)
                ids = table[key].combine_chunks()
                seen = ids if seen is None else pa.concat_arrays([seen, ids])
            elif table.num_rows:
                yield from table.to_batches(max_chunksize=ROWS_PER_BATCH)
    for table in kept:
        yield from table.to_batches(max_chunksize=ROWS_PER_BATCH)


def pattern_fields(pattern):
    import re

    return re.findall(r"\{([^{}]+)\}", pattern)


def run(spark, inputs, out, pattern, keys, top):
    """Converts the profiles under `inputs` into the fleet `out`, a table at a time: each pass
    reads the inputs again and makes only its table of each (reading is cheap beside what
    Spark does with a row; one pass keeping every table's rows for the others cost 30x)."""
    schemas = table_schemas()
    files = (
        spark.read.format("binaryFile")
        .option("recursiveFileLookup", "true")
        .load(inputs)
        .select("path", "content")
    )
    seconds = {}
    for name in TABLES:
        started = time.monotonic()
        schema = output_schema(schemas[name], name, keys)
        spark_schema = spark_struct(schema)
        rows = files.mapInArrow(
            lambda it, name=name, schema=schema: table_in_executor(it, name, schema, pattern, keys), spark_schema
        )
        if name in PER_SAMPLE:
            rows.write.mode("overwrite").partitionBy(*keys).parquet(f"{out}/{name}")
        else:
            if name in TREE_KEYS:
                rows = rows.dropDuplicates(TREE_KEYS[name])
            rows.write.mode("overwrite").parquet(f"{out}/{name}")
        seconds[name] = round(time.monotonic() - started, 2)
    started = time.monotonic()
    result = answers(spark, out, keys, top)
    seconds["queries"] = round(time.monotonic() - started, 2)
    result["seconds"] = seconds
    return result


def spark_struct(schema):
    """The Spark row type of an Arrow schema in Spark's types."""
    from pyspark.sql import types as T

    return T.StructType([T.StructField(f.name, spark_type_of_arrow(f.type), f.nullable) for f in schema])


def answers(spark, out, keys, top):
    """The top functions by self value and the total per label of the first partition key, per
    event, read from the fleet written."""
    for name in ["samples", "stack_nodes", "frames"]:
        spark.read.parquet(f"{out}/{name}").createOrReplaceTempView(name)
    top_rows = spark.sql(
        f"""
        select s.event, f.name, cast(sum(s.value) as bigint) as self
        from samples s join stack_nodes n on s.node = n.node join frames f on n.frame = f.frame
        group by s.event, f.name order by self desc, f.name limit {int(top)}"""
    ).collect()
    result = {"top": [[r[0], r[1], int(r[2])] for r in top_rows]}
    if keys:
        per = spark.sql(
            f"select {keys[0]}, event, cast(sum(value) as bigint) from samples group by 1, 2 order by 1, 2"
        ).collect()
        result[f"per_{keys[0]}"] = [[r[0], r[1], int(r[2])] for r in per]
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs")
    parser.add_argument("out")
    parser.add_argument("--label-from-path", default="{service}/{host}")
    parser.add_argument("--partition-by", default=None)
    parser.add_argument("--master", default=None)
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    keys = args.partition_by.split(",") if args.partition_by else pattern_fields(args.label_from_path)[:1]

    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    # Plain python: the executors run this interpreter, which has the module.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("cfghub-fleet")
    if args.master:
        builder = builder.master(args.master)
    elif not SparkConf().contains("spark.master"):
        # Not under spark-submit (which says where to run): this machine's cores.
        builder = builder.master("local[*]")
    if not SparkConf().contains("spark.driver.memory"):
        # Spark's 1 GB default is short of the kept conversion of a few hundred profiles.
        builder = builder.config("spark.driver.memory", "2g")
    spark = (
        builder.config("spark.sql.shuffle.partitions", "8")
        # A batch of input rows is that many whole files: a few at a time.
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "4")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        result = run(spark, args.inputs, args.out, args.label_from_path, keys, args.top)
    finally:
        spark.stop()
    if args.json:
        print(json.dumps(result))
    else:
        for event, name, value in result["top"]:
            print(f"{value:>14} {event:<10} {name}")
        print("\nseconds: " + ", ".join(f"{k} {v}" for k, v in result["seconds"].items()))
        for key in (k for k in result if k.startswith("per_")):
            print()
            for label, event, value in result[key]:
                print(f"{value:>14} {event:<10} {key[4:]}={label}")


if __name__ == "__main__":
    main()
