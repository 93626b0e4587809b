//! OAuth for mounted Streamable HTTP servers, end to end on loopback: `tools mcp login` against
//! a local authorization server (the test plays the browser: it fetches the printed URL and
//! follows its redirect to the login's listener), then `tools` mounting the protected server,
//! refreshing expired tokens (once, for two processes at a time), and the attacks a login must
//! refuse.

use crate::common;
#[path = "common/oauth_server.rs"]
mod oauth_server;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{Fixture, HttpServer, TOOLS};
use oauth_server::{OAuthServer, Options};
use serde_json::{Value, json};

/// The answer to a plain HTTP/1.1 request: status, headers (lower-case names), body.
struct HttpAnswer {
    status: u16,
    headers: HashMap<String, String>,
    body: String,
}

/// One request to an `http://` URL on loopback, as a browser or a client would send it.
fn http(method: &str, url: &str, body: Option<&str>) -> HttpAnswer {
    let parsed = url::Url::parse(url).expect("a URL");
    let address = format!("{}:{}", parsed.host_str().unwrap(), parsed.port_or_known_default().unwrap());
    let mut target = parsed.path().to_owned();
    if let Some(query) = parsed.query() {
        target.push('?');
        target.push_str(query);
    }
    let mut stream = std::net::TcpStream::connect(&address).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let body = body.unwrap_or("");
    write!(
        stream,
        "{method} {target} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).expect("read the answer");
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let mut lines = head.lines();
    let status =
        lines.next().and_then(|line| line.split(' ').nth(1)).and_then(|s| s.parse().ok()).unwrap_or(0);
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    HttpAnswer { status, headers, body: body.to_owned() }
}

/// A fixture with an `mcpServers` file naming the protected server `secure`, and the private
/// configuration directory where the tokens go.
struct Setup {
    fx: Fixture,
    server: OAuthServer,
    config: PathBuf,
}

impl Setup {
    fn new(options: Options) -> Setup {
        let fx = Fixture::new();
        let server = OAuthServer::start(options);
        let config = fx.dir.path().join("mcp.json");
        let text = json!({"mcpServers": {"secure": {"url": server.mcp_url()}}});
        std::fs::write(&config, text.to_string()).unwrap();
        Setup { fx, server, config }
    }

    fn token_file(&self) -> PathBuf {
        self.fx.dir.path().join("config/tools/mcp-oauth/credentials.json")
    }

    /// `tools ARGS` with the tokens under the fixture and no display (no browser opens).
    fn command(&self, args: &[&str]) -> Command {
        let mut command = self.fx.command(args);
        command
            .env("XDG_CONFIG_HOME", self.fx.dir.path().join("config"))
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY");
        command
    }

    /// `tools mcp login secure`, waiting at most `timeout_secs` for the browser, no standard input.
    fn login_command(&self, timeout_secs: &str) -> Command {
        let config = self.config.to_str().unwrap();
        let mut command =
            self.command(&["mcp", "login", "secure", "--mcp-config", config, "--timeout-secs", timeout_secs]);
        command.stdin(Stdio::null());
        command
    }

    /// `tools call secure__secret`: its exit code, standard output and error.
    fn call_secret(&self) -> (i32, String, String) {
        let output = self
            .command(&["call", "secure__secret", "--mcp-config", self.config.to_str().unwrap()])
            .output()
            .unwrap();
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    /// Starts `tools mcp login secure` and reads the authorization URL it prints.
    #[allow(clippy::zombie_processes, reason = "the child goes to the caller, which waits for it")]
    fn start_login(&self) -> (Child, String) {
        let mut child = self
            .login_command("60")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn tools mcp login");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut printed = String::new();
        loop {
            let mut line = String::new();
            if stderr.read_line(&mut line).unwrap() == 0 {
                let _ = child.wait();
                panic!("the login printed no URL: {printed}");
            }
            printed.push_str(&line);
            if line.starts_with("http://") {
                // Keep reading standard error so the login never blocks on it.
                std::thread::spawn(move || {
                    let mut rest = String::new();
                    let _ = stderr.read_to_string(&mut rest);
                });
                return (child, line.trim().to_owned());
            }
        }
    }

    /// The browser's first step: the authorization URL, answered with a redirect to our listener.
    fn authorize(&self, url: &str) -> String {
        let answer = http("GET", url, None);
        assert_eq!(answer.status, 302, "{}", answer.body);
        answer.headers["location"].clone()
    }

    /// A whole login, the test playing the browser.
    fn login(&self) {
        let (child, url) = self.start_login();
        let callback = self.authorize(&url);
        let answer = http("GET", &callback, None);
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert!(answer.body.contains("Logged in"), "{}", answer.body);
        let output = child.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(0));
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.starts_with("Logged in to `secure`; its tokens are in "), "{stdout}");
    }

    fn stored(&self) -> Value {
        let text = std::fs::read_to_string(self.token_file()).expect("the token file");
        let file: Value = serde_json::from_str(&text).unwrap();
        file["servers"][self.server.mcp_url()].clone()
    }

    /// A login that fails: its exit code and standard error.
    fn failed_login(&self) -> (i32, String) {
        let output = self.login_command("5").output().unwrap();
        (output.status.code().unwrap_or(-1), String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

fn query(url: &str) -> HashMap<String, String> {
    url::Url::parse(url).unwrap().query_pairs().into_owned().collect()
}

#[test]
fn login_then_mount_lists_and_calls_the_protected_tool() {
    let setup = Setup::new(Options::default());
    let (code, _, stderr) = setup.call_secret();
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("it requires OAuth authorization (HTTP 401) and no valid token for it is stored; log in with `tools mcp login secure`"),
        "{stderr}"
    );

    let (child, url) = setup.start_login();
    let asked = query(&url);
    assert_eq!(asked["code_challenge_method"], "S256");
    assert_eq!(asked["resource"], setup.server.mcp_url());
    assert!(asked["redirect_uri"].starts_with("http://127.0.0.1:"), "{url}");
    assert!(asked["state"].len() >= 16, "{url}");
    let callback = setup.authorize(&url);
    assert_eq!(http("GET", &callback, None).status, 200);
    assert_eq!(child.wait_with_output().unwrap().status.code(), Some(0));

    let file = setup.token_file();
    let mode = |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(file.parent().unwrap()), 0o700);
    let stored = setup.stored();
    assert_eq!(stored["server"], "secure");
    assert!(stored["credentials"]["client_id"].as_str().unwrap().starts_with("client-"), "{stored}");
    assert_eq!(stored["credentials"]["issuer"], setup.server.base);

    let list = setup.command(&["list", "--mcp-config", setup.config.to_str().unwrap()]).output().unwrap();
    assert_eq!(list.status.code(), Some(0), "{}", String::from_utf8_lossy(&list.stderr));
    let names: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert!(names.as_array().unwrap().iter().any(|d| d["name"] == "secure__secret"));
    let (code, stdout, stderr) = setup.call_secret();
    assert_eq!(code, 0, "{stderr}");
    let result: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(result["output"], "the protected secret");

    let stats = setup.server.stats();
    assert_eq!((stats.registrations, stats.code_exchanges, stats.refreshes), (1, 1, 0), "{stats:?}");

    let logout = setup
        .command(&["mcp", "logout", "secure", "--mcp-config", setup.config.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&logout.stdout), "Logged out of `secure`: its tokens are removed.\n");
    let (code, _, stderr) = setup.call_secret();
    assert_eq!(code, 1);
    assert!(stderr.contains("log in with `tools mcp login secure`"), "{stderr}");
}

/// Discovery starts from the 401 of an MCP request: a server that publishes its metadata only
/// where its challenge says, and answers no `GET`, is still found, with the challenge's scopes.
#[test]
fn the_login_follows_the_challenge_of_a_401_to_the_metadata_and_its_scopes() {
    let setup = Setup::new(Options { challenge_only: true, ..Options::default() });
    let (child, url) = setup.start_login();
    assert_eq!(query(&url)["scope"], "mcp extra", "{url}");
    let callback = setup.authorize(&url);
    assert_eq!(http("GET", &callback, None).status, 200);
    assert_eq!(child.wait_with_output().unwrap().status.code(), Some(0));
    let (code, stdout, stderr) = setup.call_secret();
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(serde_json::from_str::<Value>(&stdout).unwrap()["output"], "the protected secret");
}

#[test]
fn an_expired_access_token_is_refreshed_and_the_rotated_refresh_token_stored() {
    let setup = Setup::new(Options { token_ttl: Some(1), ..Options::default() });
    setup.login();
    let first_refresh =
        setup.stored()["credentials"]["token_response"]["refresh_token"].as_str().unwrap().to_owned();
    std::thread::sleep(Duration::from_millis(2100));

    let (code, stdout, stderr) = setup.call_secret();
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("the protected secret"), "{stdout}");
    assert_eq!(setup.server.stats().refreshes, 1);
    let rotated =
        setup.stored()["credentials"]["token_response"]["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(rotated, first_refresh, "the rotated refresh token is stored");
    assert_eq!(std::fs::metadata(setup.token_file()).unwrap().permissions().mode() & 0o777, 0o600);

    // The server refuses the rotated-away token, so a second refresh with it would have failed.
    let client_id = setup.stored()["credentials"]["client_id"].as_str().unwrap().to_owned();
    let reuse = http(
        "POST",
        &format!("{}/token", setup.server.base),
        Some(&format!("grant_type=refresh_token&refresh_token={first_refresh}&client_id={client_id}")),
    );
    assert_eq!(reuse.status, 400, "{}", reuse.body);
    assert!(reuse.body.contains("invalid_grant"), "{}", reuse.body);
}

#[test]
fn a_token_the_server_refuses_is_refreshed_once_and_the_request_sent_again() {
    let setup = Setup::new(Options::default());
    setup.login();
    setup.server.expire_access_tokens();
    let (code, stdout, stderr) = setup.call_secret();
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("the protected secret"), "{stdout}");
    let stats = setup.server.stats();
    assert_eq!(stats.refreshes, 1, "{stats:?}");
    assert!(stats.mcp_unauthorized >= 1, "{stats:?}");
}

#[test]
fn a_refresh_token_never_goes_to_another_authorization_server() {
    let setup = Setup::new(Options { token_ttl: Some(1), ..Options::default() });
    setup.login();
    let other = OAuthServer::start(Options::default());
    setup.server.move_to_authorization_server(&other.base);
    std::thread::sleep(Duration::from_millis(2100));
    let (code, _, stderr) = setup.call_secret();
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "its authorization server is now `{}`, not `{}` that issued the stored tokens; log in with `tools mcp login secure`",
            other.base, setup.server.base
        )),
        "{stderr}"
    );
    assert_eq!((other.stats().refreshes, other.stats().refused_refreshes), (0, 0));
    assert_eq!(setup.server.stats().refreshes, 0);
}

#[test]
fn two_processes_with_an_expired_token_refresh_it_once() {
    let setup = Setup::new(Options {
        token_ttl: Some(1),
        refreshed_ttl: Some(3600),
        refresh_delay: Duration::from_millis(800),
        ..Options::default()
    });
    setup.login();
    std::thread::sleep(Duration::from_millis(2100));
    let calls: Vec<Child> = (0..2)
        .map(|_| {
            setup
                .command(&["call", "secure__secret", "--mcp-config", setup.config.to_str().unwrap()])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for call in calls {
        let output = call.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
        assert!(String::from_utf8_lossy(&output.stdout).contains("the protected secret"));
    }
    let stats = setup.server.stats();
    assert_eq!((stats.refreshes, stats.refused_refreshes), (1, 0), "{stats:?}");
}

#[test]
fn a_wrong_pkce_verifier_is_refused_and_the_right_one_accepted() {
    let setup = Setup::new(Options::default());
    let (child, url) = setup.start_login();
    let asked = query(&url);
    let callback = setup.authorize(&url);
    let code = query(&callback)["code"].clone();
    let stolen = http(
        "POST",
        &format!("{}/token", setup.server.base),
        Some(&format!(
            "grant_type=authorization_code&code={code}&code_verifier={}&client_id={}&redirect_uri={}&resource={}",
            "a".repeat(43),
            asked["client_id"],
            url::form_urlencoded::byte_serialize(asked["redirect_uri"].as_bytes()).collect::<String>(),
            url::form_urlencoded::byte_serialize(asked["resource"].as_bytes()).collect::<String>(),
        )),
    );
    assert_eq!(stolen.status, 400, "{}", stolen.body);
    assert!(stolen.body.contains("code_verifier does not match"), "{}", stolen.body);
    assert_eq!(http("GET", &callback, None).status, 200);
    assert_eq!(child.wait_with_output().unwrap().status.code(), Some(0));
    let stats = setup.server.stats();
    assert_eq!((stats.refused_verifiers, stats.code_exchanges), (1, 1), "{stats:?}");
}

#[test]
fn a_redirect_with_another_state_is_refused_and_the_login_goes_on() {
    let setup = Setup::new(Options::default());
    let (child, url) = setup.start_login();
    let callback = setup.authorize(&url);
    let mut forged = url::Url::parse(&callback).unwrap();
    let code = query(&callback)["code"].clone();
    forged.query_pairs_mut().clear().append_pair("code", &code).append_pair("state", "attacker");
    let answer = http("GET", forged.as_str(), None);
    assert_eq!(answer.status, 400);
    assert!(answer.body.contains("does not match"), "{}", answer.body);
    forged.query_pairs_mut().clear().append_pair("code", &code);
    assert_eq!(http("GET", forged.as_str(), None).status, 400, "no state at all");
    assert_eq!(setup.server.stats().code_exchanges, 0);

    assert_eq!(http("GET", &callback, None).status, 200);
    assert_eq!(child.wait_with_output().unwrap().status.code(), Some(0));
    assert_eq!(setup.server.stats().code_exchanges, 1);
}

#[test]
fn an_authorization_server_naming_another_issuer_is_refused() {
    let setup = Setup::new(Options { issuer: Some("http://127.0.0.1:1".to_owned()), ..Options::default() });
    let (code, stderr) = setup.failed_login();
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("issuer mismatch"), "{stderr}");
    assert_eq!(setup.server.stats().registrations, 0);
    assert!(!setup.token_file().exists());
}

#[test]
fn resource_metadata_for_another_resource_is_refused() {
    let setup =
        Setup::new(Options { resource: Some("http://127.0.0.1:1/mcp".to_owned()), ..Options::default() });
    let (code, stderr) = setup.failed_login();
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("resource mismatch"), "{stderr}");
    assert_eq!(setup.server.stats().registrations, 0);
}

#[test]
fn a_plain_http_endpoint_on_another_host_is_refused() {
    let setup = Setup::new(Options {
        token_endpoint: Some("http://auth.example.com/token".to_owned()),
        ..Options::default()
    });
    let (code, stderr) = setup.failed_login();
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(
            "its authorization server's token endpoint `http://auth.example.com/token` is not `https://`"
        ),
        "{stderr}"
    );
    assert_eq!(setup.server.stats().registrations, 0);
}

#[test]
fn a_token_file_others_may_read_is_refused_with_the_fix() {
    let setup = Setup::new(Options::default());
    setup.login();
    let file = setup.token_file();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    let (code, _, stderr) = setup.call_secret();
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("may be read by other users (mode 0640)"), "{stderr}");
    assert!(stderr.contains(&format!("chmod 600 {}", file.display())), "{stderr}");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(setup.call_secret().0, 0);
}

#[test]
fn a_client_id_of_the_entry_is_used_without_registering() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let setup = Setup::new(Options {
        preregistered: Some(("fixed-client".to_owned(), redirect)),
        ..Options::default()
    });
    let text = json!({"mcpServers": {"secure": {"url": setup.server.mcp_url(), "oauth": {"clientId": "fixed-client", "callbackPort": port}}}});
    std::fs::write(&setup.config, text.to_string()).unwrap();
    setup.login();
    assert_eq!(setup.stored()["credentials"]["client_id"], "fixed-client");
    let stats = setup.server.stats();
    assert_eq!((stats.registrations, stats.code_exchanges), (0, 1), "{stats:?}");
    assert_eq!(setup.call_secret().0, 0);
}

#[test]
fn a_server_without_oauth_mounts_whatever_the_token_file_holds() {
    let setup = Setup::new(Options::default());
    let file = setup.token_file();
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, r#"{"version":1,"servers":{}}"#).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let open = HttpServer::start(&setup.fx, &[]);
    let config = setup.fx.dir.path().join("open.json");
    std::fs::write(&config, json!({"mcpServers": {"open": {"url": open.url}}}).to_string()).unwrap();
    let output = setup
        .command(&[
            "call",
            "open__read",
            r#"{"path": "hello.txt"}"#,
            "--mcp-config",
            config.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    // The protected server gets the reason its token cannot be read.
    let (code, _, stderr) = setup.call_secret();
    assert_eq!(code, 1);
    assert!(stderr.contains("may be read by other users (mode 0644)"), "{stderr}");
}

#[test]
fn a_401_without_oauth_metadata_asks_for_a_token_and_a_refused_header_names_it() {
    let setup = Setup::new(Options::default());
    let token_file = setup.fx.dir.path().join("token");
    std::fs::write(&token_file, "t0ken\n").unwrap();
    let guarded = HttpServer::start(&setup.fx, &["--auth-token-file", token_file.to_str().unwrap()]);
    let config = setup.fx.dir.path().join("guarded.json");
    let stderr_with = |entry: Value| {
        std::fs::write(&config, json!({"mcpServers": {"guarded": entry}}).to_string()).unwrap();
        let output = setup.command(&["list", "--mcp-config", config.to_str().unwrap()]).output().unwrap();
        assert_eq!(output.status.code(), Some(1));
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let stderr = stderr_with(json!({"url": guarded.url}));
    assert!(
        stderr.contains("it requires authorization (HTTP 401, `WWW-Authenticate: Bearer realm=\"mcp\"`); set its token in `headers`"),
        "{stderr}"
    );
    assert!(stderr.contains("if it supports OAuth, log in with `tools mcp login guarded`"), "{stderr}");
    let stderr = stderr_with(json!({"url": guarded.url, "headers": {"Authorization": "Bearer wrong"}}));
    assert!(
        stderr.contains(
            "it refused the `Authorization` header of its entry (HTTP 401); check the token in `headers`"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("tools mcp login"), "{stderr}");
}

#[test]
fn login_names_the_servers_when_the_name_is_unknown() {
    let setup = Setup::new(Options::default());
    let output = setup
        .command(&["mcp", "login", "nope", "--mcp-config", setup.config.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no server `nope` (enabled) in it; the servers are: `secure`"), "{stderr}");
    let _ = TOOLS;
}

/// A 403 `insufficient_scope` names the scopes and the login that grants them; that login asks
/// for the scopes granted before and those the server wanted, and the call then succeeds.
#[test]
fn a_403_for_want_of_scopes_names_them_and_the_next_login_asks_for_them() {
    let setup = Setup::new(Options { step_up: true, ..Options::default() });
    setup.login();
    assert_eq!(setup.server.authorize_queries()[0]["scope"], "mcp");

    let (code, stdout, stderr) = setup.call_secret();
    assert_eq!(code, 1, "{stdout}{stderr}");
    let result: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        result["output"],
        "The MCP server `secure` refused to run `secret`: it needs the OAuth scopes `mcp write` for this request (HTTP 403 `insufficient_scope`), which its token was not granted; to grant them, log in with `tools mcp login secure` (it will ask for `mcp write`), then try again."
    );
    assert_eq!(setup.stored()["wanted_scopes"], json!(["mcp", "write"]));
    // The session was not given up for a server that stopped: the listing still works.
    assert_eq!(setup.server.stats().insufficient_scope, 1);

    setup.login();
    assert_eq!(setup.server.authorize_queries()[1]["scope"], "mcp write");
    let (code, stdout, stderr) = setup.call_secret();
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(serde_json::from_str::<Value>(&stdout).unwrap()["output"], "the protected secret");
    assert_eq!(setup.stored().get("wanted_scopes"), None, "granted now: {}", setup.stored());
}

/// With `grantType` `client_credentials` no person logs in: the mount gets a token with the
/// client's own credentials (HTTP Basic, as the metadata asks), and asks again, with the wider
/// scopes, when the server answers 403 `insufficient_scope`.
#[test]
fn a_client_credentials_client_gets_and_widens_its_token_without_a_person() {
    let setup = Setup::new(Options {
        step_up: true,
        machine_client: Some(("machine".to_owned(), "machine-secret".to_owned())),
        ..Options::default()
    });
    let text = json!({"mcpServers": {"secure": {"url": setup.server.mcp_url(), "oauth": {"grantType": "client_credentials", "clientId": "machine", "clientSecret": "machine-secret"}}}});
    std::fs::write(&setup.config, text.to_string()).unwrap();
    let (code, stdout, stderr) = setup.call_secret();
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(serde_json::from_str::<Value>(&stdout).unwrap()["output"], "the protected secret");
    assert_eq!(setup.server.machine_scopes(), ["mcp", "mcp write"]);
    let stats = setup.server.stats();
    assert_eq!(
        (stats.client_credentials, stats.insufficient_scope, stats.authorizations),
        (2, 1, 0),
        "{stats:?}"
    );
    assert_eq!(setup.stored()["credentials"]["client_id"], "machine");

    // The stored token, with its scopes, serves the next process.
    assert_eq!(setup.call_secret().0, 0);
    assert_eq!(setup.server.stats().client_credentials, 2);

    // `tools mcp login` asks for a token the same way, without a browser.
    let login = setup
        .command(&["mcp", "login", "secure", "--mcp-config", setup.config.to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(login.status.code(), Some(0), "{}", String::from_utf8_lossy(&login.stderr));
    assert_eq!(setup.server.stats().client_credentials, 3);
    assert_eq!(setup.server.machine_scopes()[2], "mcp write");

    // A wrong secret is refused with the keys to check.
    let text = json!({"mcpServers": {"secure": {"url": setup.server.mcp_url(), "oauth": {"grantType": "client_credentials", "clientId": "machine", "clientSecret": "wrong"}}}});
    std::fs::write(&setup.config, text.to_string()).unwrap();
    std::fs::remove_file(setup.token_file()).unwrap();
    let (code, _, stderr) = setup.call_secret();
    assert_eq!(code, 1);
    assert!(stderr.contains("check `oauth.clientId` and `oauth.clientSecret`"), "{stderr}");
}

/// A server of the 2025-03-26 revision that publishes no metadata but answers 401 with a
/// `Bearer` challenge: the login uses the default endpoints at its origin (`/register`,
/// `/authorize`, `/token`), and the mount refreshes there.
#[test]
fn without_metadata_a_bearer_401_leads_to_the_default_endpoints_at_the_origin() {
    let setup = Setup::new(Options { no_metadata: true, token_ttl: Some(1), ..Options::default() });
    setup.login();
    let stats = setup.server.stats();
    assert_eq!((stats.registrations, stats.code_exchanges), (1, 1), "{stats:?}");
    assert_eq!(setup.stored()["credentials"]["issuer"], Value::Null);
    std::thread::sleep(Duration::from_millis(1100));
    let (code, stdout, stderr) = setup.call_secret();
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(serde_json::from_str::<Value>(&stdout).unwrap()["output"], "the protected secret");
    assert_eq!(setup.server.stats().refreshes, 1);
}

/// With `clientMetadataUrl`, a server that takes client ID metadata documents gets that URL as
/// the client id and no registration; one that does not gets a registration as before.
#[test]
fn a_client_metadata_url_is_the_client_id_where_the_server_takes_one() {
    let document = "https://client.example/tools-client.json";
    for takes_documents in [true, false] {
        let setup = Setup::new(Options { metadata_documents: takes_documents, ..Options::default() });
        let text = json!({"mcpServers": {"secure": {"url": setup.server.mcp_url(), "oauth": {"clientMetadataUrl": document}}}});
        std::fs::write(&setup.config, text.to_string()).unwrap();
        setup.login();
        let client_id = setup.server.authorize_queries()[0]["client_id"].clone();
        assert_eq!(client_id == document, takes_documents, "{client_id}");
        assert_eq!(setup.server.stats().registrations, u32::from(!takes_documents));
        assert_eq!(setup.call_secret().0, 0);
    }
}
