"""Spark jobs: each ``run(spark, batch_dir, ...)`` distributes library code."""
