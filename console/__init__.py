"""The tenant admin console and the platform-operator pages (server-rendered)."""
