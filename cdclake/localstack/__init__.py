"""docker-compose.yaml's topology as local processes on one machine (the stack test, docs/docker.md).

Each compose service becomes a process started from the settings of the compose file itself
(:mod:`cdclake.localstack.compose`): same environment and commands, with only host names, ports
and container paths mapped to this machine. The images are replaced by what ``make setup``
installs (the venv stands in for the cdclake image, Debian's PostgreSQL for ``postgres``, moto's
S3 server for MinIO).
"""
