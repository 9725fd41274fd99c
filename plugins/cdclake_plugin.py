"""Airflow plugin: the cdclake monitoring page, served by the Airflow API server and linked in its UI.

A FastAPI app mounted at ``/cdclake`` (HTML page + JSON under ``/cdclake/api``) and an external
view that shows the page inside the Airflow UI (``/plugin/cdclake``). Every route needs an
authenticated Airflow user: Airflow's own ``get_user`` validates the JWT (``Authorization:
Bearer`` or the ``_token`` cookie the UI login sets) through the configured auth manager, and the
user must be allowed to read the Airflow website. The pages come from cdclake.monitoring.views
(the monitoring index, the sources config's thresholds, the lake table's metadata); the older JSON
routes scan staging through cdclake.monitoring.batches.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar
from urllib.parse import urlsplit

from airflow.configuration import conf
from airflow.plugins_manager import AirflowPlugin
from fastapi import Depends, FastAPI, HTTPException, Query, Request, status
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from cdclake.monitoring import batches as monitoring
from cdclake.monitoring import html as monitoring_html
from cdclake.monitoring import views as monitoring_views
from cdclake.runtime.settings import Settings

URL_PREFIX = "/cdclake"
MAX_LIMIT = 1000


def _base_path() -> str:
    """The path Airflow is served under (``[api] base_url``), so links work behind a prefix too."""
    path = urlsplit(conf.get("api", "base_url", fallback="") or "").path
    return path if path.endswith("/") else path + "/"


BearerDep = Annotated[HTTPAuthorizationCredentials | None, Depends(HTTPBearer(auto_error=False))]


def _authorize(user: Any) -> Any:
    """An authenticated user still needs read access to the Airflow UI (the auth manager decides)."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.models.resource_details import AccessView

    if not get_auth_manager().is_authorized_view(access_view=AccessView.WEBSITE, user=user):
        raise HTTPException(status.HTTP_403_FORBIDDEN, "Forbidden")
    return user


async def _authenticated_user(request: Request, bearer: BearerDep) -> Any:
    """The Airflow user of this request, else HTTP 401 (no or expired token) or 403 (invalid, not allowed).

    ``get_user`` is Airflow's own check (bearer header first, then the ``_token`` cookie, through
    the auth manager). Imported here, not at module level: the security module pulls in the ORM,
    and plugins are also loaded by processes that never serve this app.
    """
    from airflow.api_fastapi.core_api.security import get_user

    return _authorize(await get_user(request, None, bearer))


async def _page_user(request: Request, bearer: BearerDep) -> Any:
    """Like _authenticated_user, but no valid login yields None: the page then redirects to the login."""
    from airflow.api_fastapi.core_api.security import get_user

    try:
        user = await get_user(request, None, bearer)
    except HTTPException:
        return None
    return _authorize(user)


UserDep = Annotated[Any, Depends(_authenticated_user)]


def _source(source: str | None, settings: Settings) -> str | None:
    if source is not None and source not in monitoring.sources(settings):
        raise HTTPException(status.HTTP_404_NOT_FOUND, "unknown source")
    return source


app = FastAPI(title="cdclake monitoring", docs_url=None, redoc_url=None, openapi_url=None)


def _login_redirect(request: Request) -> RedirectResponse:
    from airflow.api_fastapi.app import get_auth_manager

    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(get_auth_manager().get_url_login(next_url=target), status.HTTP_303_SEE_OTHER)


def _html(text: str) -> HTMLResponse:
    return HTMLResponse(text, headers={"Cache-Control": "no-store"})


@app.get("/", response_class=HTMLResponse)
def page(
    request: Request,
    user: Annotated[Any, Depends(_page_user)],
    state: Annotated[str | None, Query(pattern="^(failing|late|quarantining|healthy)$")] = None,
    page: Annotated[int, Query(ge=0)] = 0,
) -> Any:
    """Health overview (no login: redirect to Airflow's login page, then back here)."""
    if user is None:
        return _login_redirect(request)
    settings = Settings.from_env()
    model = monitoring_views.overview_model(settings)
    return _html(
        monitoring_html.render_overview(
            model, user=user.get_name(), base=_base_path(), index=str(settings.monitor_index), state=state, page=page
        )
    )


@app.get("/table", response_class=HTMLResponse)
def table_page(
    request: Request,
    user: Annotated[Any, Depends(_page_user)],
    source: str,
    table: str,
    page: Annotated[int, Query(ge=0)] = 0,
) -> Any:
    """One table's drill-down: trends, batches with their Airflow runs, snapshots, schema, quarantine."""
    if user is None:
        return _login_redirect(request)
    model = monitoring_views.table_model(Settings.from_env(), source, table, page)
    if model is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "unknown source or table")
    return _html(monitoring_html.render_table(model, user=user.get_name(), base=_base_path()))


@app.get("/api/health")
def api_health(user: UserDep) -> dict[str, Any]:
    """Every source and table with its state and reasons, worst first, and the counts per state."""
    return monitoring_views.overview_model(Settings.from_env())


@app.get("/api/table")
def api_table(user: UserDep, source: str, table: str, page: Annotated[int, Query(ge=0)] = 0) -> dict[str, Any]:
    model = monitoring_views.table_model(Settings.from_env(), source, table, page)
    if model is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "unknown source or table")
    return model


@app.get("/api/tables")
def api_tables(user: UserDep) -> list[dict[str, Any]]:
    return monitoring.table_status(Settings.from_env())


@app.get("/api/sources")
def api_sources(user: UserDep) -> list[dict[str, Any]]:
    return monitoring.source_status(Settings.from_env())


@app.get("/api/quarantine")
def api_quarantine(
    user: UserDep,
    source: str | None = None,
    limit: Annotated[int, Query(ge=0, le=MAX_LIMIT)] = monitoring.DEFAULT_LIMIT,
) -> dict[str, Any]:
    """Reasons of quarantined records (never raw values): per source its total and the latest ``limit``."""
    settings = Settings.from_env()
    source = _source(source, settings)
    return {
        "counts": monitoring.quarantine_count(settings, source),
        "limit": limit,
        "records": monitoring.quarantine_reasons(settings, source, limit),
    }


class CdclakePlugin(AirflowPlugin):
    name = "cdclake"
    fastapi_apps: ClassVar[list[dict[str, Any]]] = [
        {"app": app, "url_prefix": URL_PREFIX, "name": "cdclake monitoring"}
    ]
    external_views: ClassVar[list[dict[str, Any]]] = [
        {
            "name": "cdclake health",
            "href": f"{_base_path()}{URL_PREFIX.strip('/')}/",
            "destination": "nav",
            "url_route": "cdclake",
        }
    ]
