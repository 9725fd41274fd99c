"""What operators see: batches, quarantine, health and the pages.

Owns reading batches and quarantined records from staging (`batches`), the monitoring index and where it is
stored (`index`, `index_store`), health states (`health`), a table's lake history (`lake_history`), and the
pages: their data (`models`, `views`) and HTML (`html`, `charts`).
"""
