//! `zhiku serve`: the JSON API, the web page and MCP over HTTP, until a signal stops it.

use anyhow::{Context, Result, bail};
use zhiku_http::logging::LogFormat;
use zhiku_http::settings::Tokens;
use zhiku_http::{self as serve, AppState};

use super::args::Refresh;
use super::ctx::Ctx;
use super::exit::Exit;
use super::open::open_service;

/// The async runtime of `serve` and `mcp`.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// People from the OpenID Connect provider `[serve.oidc]` names. Its keys are asked for now, so
/// a wrong issuer shows at start; a provider that does not answer yet is a warning (its people
/// are refused with 503 until it does), not a refusal to serve.
fn people(ctx: &Ctx, table: &serve::settings::OidcTable) -> Result<serve::settings::People> {
    let (verifier, unreachable) = zhiku_app::wiring::identity::oidc_verifier(table)?;
    if let Some(e) = unreachable {
        ctx.note(&format!("warning: [serve.oidc] {e}"));
    }
    serve::settings::People::new(verifier, table)
}

/// Opens the service, checks the bind address and tokens, serves until SIGINT or SIGTERM.
pub(crate) fn run(
    ctx: &Ctx,
    bind: Option<String>,
    refresh: Refresh,
    log_format: LogFormat,
) -> Result<Exit> {
    serve::logging::init(log_format)?;
    let service = open_service(ctx, refresh)?;
    let mut settings = ctx.config(ctx.global.kb.as_deref())?.serve;
    if let Some(bind) = bind {
        settings.bind = bind;
    }
    let addr: std::net::SocketAddr = settings.bind.parse().with_context(|| {
        format!(
            "--bind {:?} is not an address like 127.0.0.1:7878",
            settings.bind
        )
    })?;
    let anonymous = zhiku_service::Caller {
        name: "anonymous".into(),
        write: false,
        principal: None,
        ..service.local_caller()
    };
    let mut tokens = Tokens::from_rules(&settings.tokens, Some(anonymous))?;
    if let Some(table) = &settings.oidc {
        tokens = tokens.with_people(people(ctx, table)?);
    }
    serve::metrics::Guard::from_settings(&settings)?;
    if !tokens.required() && !addr.ip().is_loopback() {
        bail!(
            "refusing to serve {addr} without tokens: add [[serve.tokens]] to zhiku.toml (zhiku token NAME --scope S prints one), or bind a loopback address"
        );
    }
    let kb = service.clone();
    let config = ctx.config(ctx.global.kb.as_deref())?;
    if let Some(every) = config.sweep_every_secs {
        schedule_sweeps(
            service.clone(),
            std::time::Duration::from_secs(every.max(1)),
        );
    }
    if !config.sources.is_empty() {
        if config.on_cluster() {
            ctx.note("note: [[sources]] are not synced by profile cluster (it keeps no folder)");
        } else {
            let kb_dir = ctx.kb()?;
            let root = std::fs::canonicalize(&kb_dir)?;
            let store_dir = ctx.store_dir(Some(&kb_dir))?;
            ctx.note(&format!(
                "syncing {} source(s) on their schedules",
                config.sources.len()
            ));
            super::sync::schedule(service.clone(), config, root, store_dir);
        }
    }
    let state = AppState::new(service.clone(), settings.clone(), tokens.clone());
    let gate = state.gate().clone();
    let (mcp, end_mcp_sessions) = zhiku_mcp::http_router(
        service,
        gate.clone(),
        zhiku_mcp::SessionLimits {
            total: settings.mcp_max_sessions,
            per_caller: settings.mcp_max_sessions_per_token,
            idle: std::time::Duration::from_millis(settings.mcp_session_idle_ms),
        },
    );
    let app = serve::router(state, Some(mcp));
    let (limits, lowered) = serve::conn::Limits::of(&settings);
    if let Some(lowered) = lowered {
        ctx.note(&format!("note: {lowered}"));
    }
    let shutdown_ms = settings.shutdown_timeout_ms;
    let rt = runtime()?;
    let stopped = rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        let local = listener.local_addr()?;
        ctx.note(&format!(
            "zhiku serving http://{local}  (API /v1, page /, MCP /mcp; {})",
            if let Some(o) = &settings.oidc {
                format!(
                    "{} bearer token(s) and people signed in at {}",
                    settings.tokens.len(),
                    o.issuer
                )
            } else if tokens.required() {
                format!("{} bearer token(s)", settings.tokens.len())
            } else {
                "no tokens: anonymous read-only access to the trusted scopes".to_string()
            }
        ));
        let stopped = serve::conn::serve(
            listener,
            app,
            limits,
            shutdown_signal(),
            end_mcp_sessions,
            async move { gate.drained().await },
        )
        .await;
        anyhow::Ok(stopped)
    })?;
    match stopped {
        serve::conn::Stopped::Drained => {
            // Ingests leave commits after the graph's last snapshot, which every later open
            // would replay: a clean stop saves it now.
            if let Err(e) = kb.checkpoint() {
                ctx.note(&format!("warning: {e}"));
            }
            ctx.note("zhiku stopped: every request and its work finished")
        }
        serve::conn::Stopped::DeadlinePassed { open } => ctx.note(&format!(
            "zhiku stopped after shutdown_timeout_ms ({shutdown_ms} ms) with {open} connection(s) or their work unfinished"
        )),
    }
    // Work still running past shutdown_timeout_ms is abandoned (the store's writes are
    // crash-safe).
    rt.shutdown_timeout(std::time::Duration::from_millis(100));
    Ok(Exit::Success)
}

/// Runs the retention sweep every `every` (`sweep_every`), so that an expired document or a
/// capped scope's overflow leaves without a manual `zhiku sweep`; each sweep that removed
/// something, or failed, is logged.
fn schedule_sweeps(kb: zhiku_service::SharedKb, every: std::time::Duration) {
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(every);
            match kb.sweep_all() {
                Ok(r) if r.removed.is_empty() => {}
                Ok(r) => tracing::info!(
                    target: "zhiku::retention",
                    removed = r.removed.len(),
                    "scheduled sweep removed {} document(s)",
                    r.removed.len()
                ),
                Err(e) => tracing::warn!(target: "zhiku::retention", "scheduled sweep failed: {e}"),
            }
        }
    });
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}
