"""How a process runs: settings, sources configuration, Spark session, limits.

Owns the typed runtime settings (`settings`), the sources configuration (`sources`), the Spark session
(`spark`) and its driver's class-data archive (`jvm_archive`), memory allocation (`allocator`), bounds on
hostile input (`limits`) and fault injection for the crash tests (`faults`).
"""
