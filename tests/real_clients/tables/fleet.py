"""Queries a fleet of tables with ENGINE (duckdb or spark) and prints, as JSON, the top 20
functions by self value and the total value per service label.

Usage: fleet.py ENGINE FLEET_DIR

The fleet is what `cfghub convert ... --partition-by service -o FLEET_DIR` writes: a folder per
table, Hive partitions (`service=web/`) and a file per profile. Frames and call paths have ids
derived from their content, the same in every profile: the same node in two profiles is one
node, so the tree's tables are read distinct.
"""
import json
import sys


def duckdb_answers(fleet):
    import duckdb

    c = duckdb.connect()
    t = lambda name: f"read_parquet('{fleet}/{name}/**/*.parquet', hive_partitioning = true)"
    top = c.execute(
        f"""
        with n as (select distinct node, frame from {t('stack_nodes')}),
             f as (select distinct frame, name from {t('frames')})
        select f.name, sum(s.value)::BIGINT as self
        from {t('samples')} s join n using (node) join f using (frame)
        group by 1 order by 2 desc, 1 limit 20"""
    ).fetchall()
    per = c.execute(f"select service, sum(value)::BIGINT from {t('samples')} group by 1 order by 1").fetchall()
    return top, per


def spark_answers(fleet):
    import os

    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("cfghub-fleet")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    for name in ["samples", "stack_nodes", "frames"]:
        spark.read.parquet(f"{fleet}/{name}").createOrReplaceTempView(name)
    top = spark.sql(
        """
        with n as (select distinct node, frame from stack_nodes),
             f as (select distinct frame, name from frames)
        select f.name, cast(sum(s.value) as bigint) as self
        from samples s join n on s.node = n.node join f on n.frame = f.frame
        group by f.name order by self desc, f.name limit 20"""
    ).collect()
    per = spark.sql("select service, cast(sum(value) as bigint) from samples group by 1 order by 1").collect()
    spark.stop()
    return [tuple(r) for r in top], [tuple(r) for r in per]


def main():
    engine, fleet = sys.argv[1], sys.argv[2]
    top, per = (duckdb_answers if engine == "duckdb" else spark_answers)(fleet)
    print(json.dumps({"top": [[n, int(v)] for n, v in top], "per_service": {s: int(v) for s, v in per}}))


if __name__ == "__main__":
    main()
