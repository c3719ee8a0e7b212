"""The demo's sources: a local server playing Confluence Cloud and Microsoft Graph for the demo tenants.

``bin/cairn run`` starts ``python -m connectors.demo.server``; ``load_demo`` points the demo's connector
instances at it and runs the real connectors, sync tasks and pipeline (no side door into the index).
"""
