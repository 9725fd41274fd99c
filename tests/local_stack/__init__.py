"""docker-compose.yaml's topology as local processes on one machine: test tooling for `make stack-test`
(docs/docker.md), not product code: it lives beside the tests, as the benchmarks do beside the package.

Each compose service becomes a process started from the settings of the compose file itself
(:mod:`local_stack.compose`): same environment and commands, with only host names, ports
and container paths mapped to this machine. The images are replaced by what ``make setup``
installs (the venv stands in for the cdclake image, Debian's PostgreSQL for ``postgres``, moto's
S3 server for MinIO).
"""
