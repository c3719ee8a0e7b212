"""The employee search portal (server-rendered pages; the answer streams in over SSE).

``cairn.urls`` refers to ``portal.login_view`` etc.; they are re-exported here so the
package layout can change without touching the shared URL file.
"""

from cairn.portal.views import home, login_view, logout_view, status_fragment

__all__ = ["home", "login_view", "logout_view", "status_fragment"]
