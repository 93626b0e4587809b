//! HTTP on the proxy's port: `CONNECT` tunnels and absolute-form plain-HTTP requests (hyper).

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::conn::Ctx;
use crate::refusal::{Protocol, Reason, Refusal};

type Body = BoxBody<Bytes, hyper::Error>;

pub(crate) async fn serve(stream: TcpStream, ctx: Ctx) {
    let service = hyper::service::service_fn(move |request| {
        let ctx = ctx.clone();
        async move { Ok::<_, Infallible>(handle(request, ctx).await) }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .preserve_header_case(true)
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(crate::conn::HANDSHAKE_TIMEOUT)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades()
        .await;
}

async fn handle(request: Request<Incoming>, ctx: Ctx) -> Response<Body> {
    if request.method() == Method::CONNECT {
        connect(request, ctx).await
    } else {
        forward(request, ctx).await
    }
}

/// `CONNECT host:port`: decide, connect, answer 200, then copy bytes both ways.
async fn connect(request: Request<Incoming>, ctx: Ctx) -> Response<Body> {
    let target = request.uri().authority().and_then(|a| Some((a.host().to_owned(), a.port_u16()?)));
    let Some((host, port)) = target else {
        let problem =
            format!("`CONNECT {}` does not name a host and a port (`CONNECT host:443`)", request.uri());
        return refused(&ctx, &bad(&request, problem, Protocol::Connect));
    };
    let upstream = match ctx.open(&host, port, Protocol::Connect).await {
        Ok(upstream) => upstream,
        Err(refusal) => return refused(&ctx, &refusal),
    };
    #[cfg(feature = "tls")]
    if let Some(tls) = ctx.tls.clone()
        && let Some(name) = crate::policy::normalize(&host)
        && ctx.decider.policy.secrets.iter().any(|s| s.goes_to(&name, port, true))
    {
        return terminate(request, ctx, tls, name, port, upstream).await;
    }
    ctx.spawn(async move {
        if let Ok(upgraded) = hyper::upgrade::on(request).await {
            tunnel(upgraded, upstream).await;
        }
    });
    Response::new(empty())
}

async fn tunnel(upgraded: hyper::upgrade::Upgraded, mut upstream: TcpStream) {
    // The client's own socket, when hyper hands it back, copies without hyper's layers.
    match upgraded.downcast::<TokioIo<TcpStream>>() {
        Ok(parts) => {
            let mut client = parts.io.into_inner();
            if !parts.read_buf.is_empty() && upstream.write_all(&parts.read_buf).await.is_err() {
                return;
            }
            crate::conn::relay(&mut client, &mut upstream).await;
        }
        Err(upgraded) => {
            let mut client = TokioIo::new(upgraded);
            crate::conn::copy(&mut client, &mut upstream).await;
        }
    }
}

/// A `CONNECT` to a host a secret may be sent to: TLS to the host first (a host that fails
/// verification is refused before the client is answered), then TLS with the client under a
/// certificate of the session's CA, and its requests forwarded one by one with the secret put in.
#[cfg(feature = "tls")]
async fn terminate(
    request: Request<Incoming>,
    ctx: Ctx,
    tls: std::sync::Arc<crate::tls::Terminator>,
    host: String,
    port: u16,
    upstream: TcpStream,
) -> Response<Body> {
    let upstream = match tls.connect(&host, upstream).await {
        Ok(upstream) => upstream,
        Err(problem) => {
            let refusal =
                Refusal { host, port, protocol: Protocol::Connect, reason: Reason::Certificate { problem } };
            return refused(&ctx, &refusal);
        }
    };
    let acceptor = match tls.acceptor(&host) {
        Ok(acceptor) => acceptor,
        Err(e) => {
            return text(
                StatusCode::BAD_GATEWAY,
                format!("the network proxy could not make a certificate for {host}: {e}"),
            );
        }
    };
    let handshake = hyper::client::conn::http1::Builder::new()
        .preserve_header_case(true)
        .handshake::<_, Incoming>(TokioIo::new(upstream))
        .await;
    let (sender, connection) = match handshake {
        Ok(pair) => pair,
        Err(e) => {
            return text(StatusCode::BAD_GATEWAY, format!("the network proxy could not talk to {host}: {e}"));
        }
    };
    let conn_ctx = ctx.clone();
    ctx.spawn(async move {
        let _ = connection.with_upgrades().await;
    });
    ctx.spawn(async move {
        let Ok(upgraded) = hyper::upgrade::on(request).await else { return };
        let Ok(client) = acceptor.accept(TokioIo::new(upgraded)).await else { return };
        let sender = std::sync::Arc::new(tokio::sync::Mutex::new(sender));
        let authority = if port == 443 { host.clone() } else { format!("{host}:{port}") };
        let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
            let (sender, ctx, host, authority) =
                (sender.clone(), conn_ctx.clone(), host.clone(), authority.clone());
            async move {
                // The request goes to the host the tunnel was opened to, in origin form: an
                // absolute URI naming another host would have a front end shared by both route
                // it, secrets and all, to that other host.
                if let Err(refusal) = to_origin_form(&mut request, &host, port) {
                    return Ok::<_, Infallible>(text(StatusCode::MISDIRECTED_REQUEST, refusal));
                }
                let websocket = is_websocket_upgrade(request.headers());
                strip_hop_by_hop(request.headers_mut());
                // The host whose certificate was checked is the one named, whatever the client said.
                if let Ok(value) = HeaderValue::from_str(&authority) {
                    request.headers_mut().insert(header::HOST, value);
                }
                swap_secrets(&ctx.decider.policy, &host, port, true, request.headers_mut());
                // A WebSocket handshake is passed on with its secret put in ([`pass_back`]).
                let client_upgrade = websocket.then(|| {
                    set_upgrade(request.headers_mut());
                    hyper::upgrade::on(&mut request)
                });
                let mut sender = sender.lock().await;
                let response = match sender.ready().await {
                    Ok(()) => sender.send_request(request).await,
                    Err(e) => Err(e),
                };
                drop(sender);
                Ok::<_, Infallible>(match response {
                    Ok(response) => pass_back(&ctx, &authority, client_upgrade, response),
                    Err(e) => text(
                        StatusCode::BAD_GATEWAY,
                        format!("the network proxy's request to {authority} failed: {e}"),
                    ),
                })
            }
        });
        let _ = hyper::server::conn::http1::Builder::new()
            .preserve_header_case(true)
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(crate::conn::HANDSHAKE_TIMEOUT)
            .serve_connection(TokioIo::new(client), service)
            .with_upgrades()
            .await;
    });
    Response::new(empty())
}

#[cfg(feature = "tls")]
/// Rewrites the target of a request inside a tunnel to `host`:`port` in origin form (`/path?q`);
/// `Err` says why one is refused: a `CONNECT`, or an absolute URI naming another host or port.
fn to_origin_form(request: &mut Request<Incoming>, host: &str, port: u16) -> Result<(), String> {
    if request.method() == Method::CONNECT {
        return Err(format!(
            "the network proxy refused a CONNECT inside the tunnel to {host}: open a tunnel to each host \
             through the proxy itself"
        ));
    }
    let uri = request.uri();
    if let Some(authority) = uri.authority() {
        let named = crate::policy::normalize(authority.host());
        let named_port =
            authority.port_u16().unwrap_or(if uri.scheme_str() == Some("http") { 80 } else { 443 });
        if named.as_deref() != Some(host) || named_port != port {
            return Err(format!(
                "the network proxy refused a request for {authority} inside the tunnel to {host}:{port}: \
                 requests in a tunnel go to its own host; open a tunnel to {authority} instead"
            ));
        }
    }
    if uri.authority().is_some() || uri.scheme().is_some() {
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        *request.uri_mut() = path.parse().unwrap_or_default();
    }
    Ok(())
}

/// Whether the request asks to switch to WebSocket (`Connection: Upgrade`, `Upgrade: websocket`).
fn is_websocket_upgrade(headers: &HeaderMap) -> bool {
    let has = |name: header::HeaderName, token: &str| {
        headers.get_all(name).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).any(|t| {
            let t = t.trim();
            // `Upgrade: websocket/13` names a version too.
            t.eq_ignore_ascii_case(token)
                || t.split('/').next().is_some_and(|p| p.eq_ignore_ascii_case(token))
        })
    };
    has(header::CONNECTION, "upgrade") && has(header::UPGRADE, "websocket")
}

/// Puts back the two headers of a WebSocket upgrade that [`strip_hop_by_hop`] removes.
fn set_upgrade(headers: &mut HeaderMap) {
    headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
}

/// The host's answer to a forwarded request, passed back to the client without its hop-by-hop
/// headers. A WebSocket handshake (`client_upgrade`, the client's side of it) that the host
/// accepts joins the two connections, and the frames go by unread. Any other upgrade (`h2c`) was
/// dropped from the request as a hop-by-hop header, so the host answers the request as it
/// stands; a host that switches protocols unasked is not followed.
fn pass_back(
    ctx: &Ctx,
    authority: &str,
    client_upgrade: Option<hyper::upgrade::OnUpgrade>,
    mut response: Response<Incoming>,
) -> Response<Body> {
    let switching = response.status() == StatusCode::SWITCHING_PROTOCOLS;
    if switching && client_upgrade.is_none() {
        return text(
            StatusCode::BAD_GATEWAY,
            format!(
                "{authority} switched protocols unasked; the network proxy relays only WebSocket upgrades"
            ),
        );
    }
    let host_upgrade = switching.then(|| hyper::upgrade::on(&mut response));
    let (mut parts, body) = response.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    if let (Some(client), Some(host)) = (client_upgrade, host_upgrade) {
        set_upgrade(&mut parts.headers);
        ctx.spawn(async move {
            let (Ok(client), Ok(host)) = tokio::join!(client, host) else { return };
            let _ = tokio::io::copy_bidirectional(&mut TokioIo::new(client), &mut TokioIo::new(host)).await;
        });
    }
    Response::from_parts(parts, body.boxed())
}

/// `GET http://host/path`: decide, connect, send the request in origin form, stream the answer.
async fn forward(mut request: Request<Incoming>, ctx: Ctx) -> Response<Body> {
    let uri = request.uri().clone();
    match uri.scheme_str() {
        Some("http") => {}
        Some(other) => {
            let problem = format!(
                "`{other}://` URLs are not proxied as plain requests; clients tunnel them with CONNECT"
            );
            return refused(&ctx, &bad(&request, problem, Protocol::Http));
        }
        None => {
            let problem = "this is a proxy: send absolute-form requests (`GET http://host/path`) or `CONNECT host:port`"
                .to_owned();
            return refused(&ctx, &bad(&request, problem, Protocol::Http));
        }
    }
    let Some(authority) = uri.authority().cloned() else {
        let problem = format!("`{uri}` has no host");
        return refused(&ctx, &bad(&request, problem, Protocol::Http));
    };
    let port = authority.port_u16().unwrap_or(80);
    let host = authority.host().to_owned();
    let method = request.method();
    let websocket = is_websocket_upgrade(request.headers());
    if ctx.decider.policy.limited {
        let reason = if !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
            Some(Reason::LimitedMethod { method: method.to_string() })
        } else {
            websocket.then_some(Reason::LimitedUpgrade)
        };
        if let Some(reason) = reason {
            let host = crate::policy::normalize(&host).unwrap_or(host);
            return refused(&ctx, &Refusal { host, port, protocol: Protocol::Http, reason });
        }
    }
    let upstream = match ctx.open(&host, port, Protocol::Http).await {
        Ok(upstream) => upstream,
        Err(refusal) => return refused(&ctx, &refusal),
    };
    let handshake = hyper::client::conn::http1::Builder::new()
        .preserve_header_case(true)
        .handshake::<_, Incoming>(TokioIo::new(upstream))
        .await;
    let (mut sender, connection) = match handshake {
        Ok(pair) => pair,
        Err(e) => {
            return text(
                StatusCode::BAD_GATEWAY,
                format!("the network proxy could not talk to {authority}: {e}"),
            );
        }
    };
    ctx.spawn(async move {
        let _ = connection.with_upgrades().await;
    });
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    *request.uri_mut() = path.parse().unwrap_or_default();
    strip_hop_by_hop(request.headers_mut());
    // The host connected to is the one the rules checked, whatever the client's Host header said.
    let host_header = match authority.port() {
        Some(port) => format!("{}:{port}", authority.host()),
        None => authority.host().to_owned(),
    };
    if let Ok(value) = HeaderValue::from_str(&host_header) {
        request.headers_mut().insert(header::HOST, value);
    }
    if let Some(host) = crate::policy::normalize(authority.host()) {
        swap_secrets(&ctx.decider.policy, &host, port, false, request.headers_mut());
    }
    let client_upgrade = websocket.then(|| {
        set_upgrade(request.headers_mut());
        hyper::upgrade::on(&mut request)
    });
    match sender.send_request(request).await {
        Ok(response) => pass_back(&ctx, authority.as_str(), client_upgrade, response),
        Err(e) => {
            text(StatusCode::BAD_GATEWAY, format!("the network proxy's request to {authority} failed: {e}"))
        }
    }
}

/// Puts the secrets allowed for `host` in place of their placeholders, in a request inside TLS
/// (`tls`) or in plain HTTP.
fn swap_secrets(policy: &crate::EgressPolicy, host: &str, port: u16, tls: bool, headers: &mut HeaderMap) {
    for secret in policy.secrets.iter().filter(|s| s.goes_to(host, port, tls)) {
        for value in headers.values_mut() {
            let Ok(text) = value.to_str() else { continue };
            if text.contains(&secret.placeholder)
                && let Ok(swapped) = HeaderValue::from_str(&text.replace(&secret.placeholder, &secret.value))
            {
                *value = swapped;
            }
        }
    }
}

/// Removes the headers that concern one hop only (RFC 9110 §7.6.1), and those `Connection` names.
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in [
        "connection",
        "proxy-connection",
        "keep-alive",
        "proxy-authorization",
        "proxy-authenticate",
        "te",
        "trailer",
        "upgrade",
    ] {
        headers.remove(name);
    }
}

fn bad(request: &Request<Incoming>, problem: String, protocol: Protocol) -> Refusal {
    let authority = request.uri().authority();
    Refusal {
        host: authority.map(|a| a.host().to_owned()).unwrap_or_default(),
        port: authority.and_then(|a| a.port_u16()).unwrap_or(0),
        protocol,
        reason: Reason::BadRequest { problem },
    }
}

/// Records the refusal and answers it: its status, and its sentence as the body.
fn refused(ctx: &Ctx, refusal: &Refusal) -> Response<Body> {
    ctx.record(refusal);
    let status = StatusCode::from_u16(refusal.status()).unwrap_or(StatusCode::FORBIDDEN);
    let mut response = text(status, refusal.to_string());
    // A refused CONNECT leaves the connection in no state to reuse; a plain request's client
    // opens a new one as cheaply.
    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

fn text(status: StatusCode, message: String) -> Response<Body> {
    let mut response =
        Response::new(Full::new(Bytes::from(message + "\n")).map_err(|never| match never {}).boxed());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

fn empty() -> Body {
    Full::new(Bytes::new()).map_err(|never| match never {}).boxed()
}
