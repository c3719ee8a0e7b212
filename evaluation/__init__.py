"""Evaluation harness: public data sets -> throwaway evaluation tenant -> metrics, plots, reports.

Entry point: ``manage.py evaluate --suite …`` (``evaluation/management/commands/evaluate.py``).
Every suite loads its data from ``settings.CAIRN["DEMO_DATA_DIR"]`` (``../shared/data``), goes
through the normal ingestion pipeline, and writes JSON + PNG + Markdown under ``reports/``.
"""
