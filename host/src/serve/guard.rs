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

    /// Whether a `Host` value (name, optional port) is one of ours.
    pub fn allows(&self, host: &str) -> bool {
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

/// Refuses a request whose `Host` is not ours (421), then adds the security
/// headers to whatever answers it, keeping a policy a handler set itself.
pub async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .map(|h| h.to_str().unwrap_or("(not text)").to_owned());
    let mut response = match host {
        Some(h) if !state.0.allowed_hosts.allows(&h) => AppError::Misdirected(format!(
            "this daemon does not answer to host `{}` (a guard against DNS rebinding); open it as http://127.0.0.1:PORT/ or http://localhost:PORT/, or restart it with `blocklab serve --allow-host {}` if that name is yours",
            crate::limits::clip(&h),
            crate::limits::clip(host_name(&h))
        ))
        .into_response(),
        // A request without `Host` (HTTP/1.0, or tests) comes from no browser.
        _ => next.run(request).await,
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
        ] {
            assert!(!hosts.allows(bad), "{bad}");
        }
        assert!(!AllowedHosts::default().allows("127.0.0.2"));
    }
}
