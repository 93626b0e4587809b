//! The settings file of the crate's documentation (`docs/egress.md`) means what it says, for the proxy and
//! for the settings reader of tool-runtime (rules, hooks, environment) alike.

use tool_egress::{EgressProxy, settings};
use tool_runtime::environment::EnvFilter;
use tool_runtime::permissions::{Rules, Settings};

fn manual_settings() -> String {
    let manual = include_str!("../../docs/egress.md");
    let section = manual.find("# Policy and settings").expect("the manual has the section");
    let open = "```json\n";
    let from = section + manual[section..].find(open).expect("a json block") + open.len();
    let to = from + manual[from..].find("```").expect("closing fence");
    manual[from..to].to_owned()
}

#[tokio::test]
async fn the_manual_settings_file_is_read_by_both_readers() {
    let text = manual_settings();
    let file = tool_settings::SettingsFile::parse(&text).unwrap();
    let network = settings::from_settings(&file, "the manual").unwrap();
    let proxy = EgressProxy::start(network.policy, None).await.unwrap();
    // A denied host is refused by its rule, without being resolved.
    let mut stream = tokio::net::TcpStream::connect(proxy.addr()).await.unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    stream.write_all(b"CONNECT pastebin.com:443 HTTP/1.1\r\n\r\n").await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(answer.contains("`WebFetch(domain:pastebin.com)` of permissions.deny in the manual"), "{answer}");

    let dir = std::env::temp_dir();
    let parsed = Settings::parse(&text, "the manual", Rules::builder(&dir)).unwrap();
    assert_eq!(parsed.environment(), &EnvFilter::base().with("AWS_PROFILE").with("CARGO_*"));
}
