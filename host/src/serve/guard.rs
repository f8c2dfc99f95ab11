//! What every answer of the daemon carries against a hostile page in the
//! same browser: a Content-Security-Policy (no script but the daemon's own
//! files, no framing: a page on another local port must not frame the UI
//! and click its buttons), `nosniff`, and a `Host` check against DNS
//! rebinding (a page at evil.example whose name later resolves to 127.0.0.1
//! would otherwise read the API as same-origin).

use super::{AppError, AppState};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The UI's policy: its own scripts, styles and images only, no inline
/// script, no plugins, never framed. Inline styles stay allowed for the
/// charts' positioning (uPlot); they cannot run code.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The policy of a stored flamegraph SVG: a sandbox (an opaque origin with
/// no script), framable only by the UI's own pages.
pub const SANDBOXED_CSP: &str =
    "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'";

/// Host names every daemon answers to besides its bound address.
const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// The names a `Host` header may carry: the loopback names, the bound
/// address and those given with `blocklab serve --allow-host`.
#[derive(Debug, Clone, Default)]
pub struct AllowedHosts {
    extra: Vec<String>,
}

impl AllowedHosts {
    /// The loopback names and `listen`'s address, plus `names`.
    pub fn new(listen: Option<std::net::IpAddr>, names: &[String]) -> AllowedHosts {
        let mut extra: Vec<String> = names.iter().map(|n| n.to_ascii_lowercase()).collect();
        match listen {
            Some(std::net::IpAddr::V6(ip)) => extra.push(format!("[{ip}]")),
            Some(ip) => extra.push(ip.to_string()),
            None => {}
        }
        AllowedHosts { extra }
    }

    /// Whether a `Host` value (name, optional port) is one of ours. A value
    /// that is not a plain `name[:port]` is not: `localhost:80@evil.example`
    /// names `evil.example` to a browser.
    pub fn allows(&self, host: &str) -> bool {
        if !is_plain_host(host) {
            return false;
        }
        let name = host_name(host).to_ascii_lowercase();
        LOOPBACK_NAMES.contains(&name.as_str()) || self.extra.contains(&name)
    }
}

/// The name of a `Host` value without its port (`[::1]:80` → `[::1]`).
fn host_name(host: &str) -> &str {
    if host.starts_with('[') {
        return host.find(']').map_or(host, |end| &host[..=end]);
    }
    host.rsplit_once(':').map_or(host, |(name, _)| name)
}

/// Whether `host` is `name[:port]` with a DNS name or IPv4 address
/// (letters, digits, `.`, `-`) or a bracketed IPv6 address, and a port of
/// digits: no user info, path or second colon.
fn is_plain_host(host: &str) -> bool {
    let (name, port) = match host.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((ip, after)) => {
                if ip.parse::<std::net::Ipv6Addr>().is_err() {
                    return false;
                }
                match after.strip_prefix(':') {
                    Some(port) => (None, Some(port)),
                    None if after.is_empty() => (None, None),
                    None => return false,
                }
            }
            None => return false,
        },
        None => match host.split_once(':') {
            Some((name, port)) => (Some(name), Some(port)),
            None => (Some(host), None),
        },
    };
    let name_ok = name.is_none_or(|n| {
        !n.is_empty()
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
    });
    let port_ok =
        port.is_none_or(|p| (1..=5).contains(&p.len()) && p.chars().all(|c| c.is_ascii_digit()));
    name_ok && port_ok
}

/// Refuses a request whose `Host` is not ours (421), then adds the security
/// headers to whatever answers it, keeping a policy a handler set itself.
pub async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let hosts: Vec<String> = request
        .headers()
        .get_all(header::HOST)
        .iter()
        .map(|h| h.to_str().unwrap_or("(not text)").to_owned())
        // An absolute request target names a host too, and a proxy or a
        // browser goes by it rather than by `Host`.
        .chain(request.uri().authority().map(|a| a.as_str().to_owned()))
        .collect();
    let foreign = hosts.iter().find(|h| !state.0.allowed_hosts.allows(h));
    let mut response = if request.headers().get_all(header::HOST).iter().count() > 1 {
        // RFC 9112 §3.2: a request with more than one `Host` is a 400.
        AppError::bad_request(
            "the request has more than one `Host` header; send exactly one (`Host: localhost:PORT`)",
        )
        .into_response()
    } else if let Some(h) = foreign {
        AppError::Misdirected(format!(
            "this daemon does not answer to host `{}` (a guard against DNS rebinding); open it as http://127.0.0.1:PORT/ or http://localhost:PORT/, or restart it with `blocklab serve --allow-host {}` if that name is yours",
            crate::limits::clip(h),
            crate::limits::clip(host_name(h))
        ))
        .into_response()
    } else {
        // A request without `Host` (HTTP/1.0, or tests) comes from no browser.
        next.run(request).await
    };
    let headers = response.headers_mut();
    if !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CSP),
        );
        headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_is_ours_by_name_whatever_its_port() {
        let hosts = AllowedHosts::new(
            Some("127.0.0.2".parse().unwrap()),
            &["Bench.Local".to_owned()],
        );
        for ok in [
            "localhost",
            "localhost:7878",
            "127.0.0.1:1",
            "[::1]:7878",
            "127.0.0.2:9",
            "bench.local:80",
        ] {
            assert!(hosts.allows(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:7878",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
            "[::2]:7878",
            "",
            // Issue 32, item 6: user info, a second port, a path.
            "localhost:80@evil.example",
            "localhost@evil.example",
            "localhost:80:81",
            "localhost:",
            "localhost/evil",
            "[::1]x",
            "[::1",
        ] {
            assert!(!hosts.allows(bad), "{bad}");
        }
        assert!(!AllowedHosts::default().allows("127.0.0.2"));
    }
}
