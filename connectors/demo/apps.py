from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The demo tenant: exports, the demo source server and the loader with its commands."""

    name = "connectors.demo"
    label = "demo"
