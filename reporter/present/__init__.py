"""How computed figures are shown: one formatter, tables (terminal, CSV, JSON, Markdown, HTML), labels,
the en/zh messages, views, charts and the page templates. It computes nothing."""
