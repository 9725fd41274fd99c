"""Landing files into batches.

Owns staging (`stage`: a local folder or S3, each file exactly once), the batch folder and its manifest
(`batch`), reading landing and staged files (`reading`), and the seekable zstd container (`seekable_zstd`).
"""
