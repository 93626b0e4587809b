//! A conversation over a catalog of 1,000 generated tools (20 services x 10 kinds of object x
//! 5 operations, named in three styles): each request is written from a tool's description, in
//! other words than its name, and the search must find that tool within the top 3; the found
//! tool is then offered in the next request and called.

use serde_json::{Value, json};
use tool_runtime::catalog::{Catalog, LoadedTools, TurnResult};
use tool_runtime::{
    CancellationToken, Dispatcher, Registry, ToolOutput, ToolSpec,
    providers::{DefinitionOptions, Provider},
    spec::FnTool,
};

/// A service: its name in tool names, its name in prose, and its kinds of object, each with a
/// short gloss of what it is.
struct Service {
    id: &'static str,
    title: &'static str,
    objects: [(&'static str, &'static str); 10],
}

const SERVICES: [Service; 20] = [
    Service {
        id: "github",
        title: "GitHub",
        objects: [
            ("issue", "a bug report or feature request"),
            ("pull_request", "proposed code changes awaiting review"),
            ("branch", "a line of development"),
            ("release", "a tagged, published version"),
            ("workflow_run", "one execution of a CI pipeline"),
            ("gist", "a shared code snippet"),
            ("repository", "a project's code and history"),
            ("label", "a colored tag for triage"),
            ("milestone", "a target date grouping issues"),
            ("review_comment", "a remark on a changed line"),
        ],
    },
    Service {
        id: "jira",
        title: "Jira",
        objects: [
            ("ticket", "a unit of tracked work"),
            ("sprint", "a time-boxed iteration"),
            ("board", "a kanban view of work"),
            ("epic", "a large body of work split into tickets"),
            ("worklog", "time spent on a ticket"),
            ("component", "a part of a project owned by a team"),
            ("version", "a planned product version"),
            ("filter", "a saved ticket query"),
            ("dashboard", "a page of gadgets"),
            ("watcher", "a person notified of changes"),
        ],
    },
    Service {
        id: "slack",
        title: "Slack",
        objects: [
            ("channel", "a conversation space for a team"),
            ("message", "a post in a conversation"),
            ("reminder", "a nudge delivered at a set time"),
            ("user_group", "a mentionable group of people"),
            ("bookmark", "a link pinned to a channel header"),
            ("emoji", "a custom reaction image"),
            ("scheduled_message", "a post sent later"),
            ("canvas", "a shared document inside a channel"),
            ("huddle", "a lightweight audio call"),
            ("status", "a person's availability text"),
        ],
    },
    Service {
        id: "gmail",
        title: "Gmail",
        objects: [
            ("email", "a mail message"),
            ("draft", "an unsent mail"),
            ("thread", "a conversation of mails"),
            ("mail_label", "a folder-like tag on mail"),
            ("attachment", "a file sent with a mail"),
            ("filter_rule", "an automatic sorting rule for incoming mail"),
            ("signature", "text appended to outgoing mail"),
            ("vacation_responder", "an automatic out-of-office reply"),
            ("contact", "a saved correspondent"),
            ("forwarding_address", "where copies of mail are sent"),
        ],
    },
    Service {
        id: "calendar",
        title: "Google Calendar",
        objects: [
            ("event", "a meeting or appointment on a date"),
            ("calendar", "a named schedule"),
            ("attendee", "a guest invited to a meeting"),
            ("recurrence", "the repeat pattern of a meeting"),
            ("free_busy", "availability over a time range"),
            ("room", "a bookable meeting room"),
            ("acl_rule", "who may see or edit a schedule"),
            ("event_reminder", "an alert before a meeting starts"),
            ("working_hours", "the hours someone is available"),
            ("color", "the display color of a schedule"),
        ],
    },
    Service {
        id: "drive",
        title: "Google Drive",
        objects: [
            ("file", "a stored document, image or binary"),
            ("folder", "a container of documents"),
            ("permission", "a grant of access to a document"),
            ("revision", "an earlier saved version of a document"),
            ("shared_drive", "a team-owned storage space"),
            ("shortcut", "a pointer to a document elsewhere"),
            ("doc_comment", "a remark anchored in a document"),
            ("trash_item", "a deleted document awaiting purge"),
            ("quota", "storage space used and available"),
            ("export_link", "a download in another format"),
        ],
    },
    Service {
        id: "postgres",
        title: "PostgreSQL",
        objects: [
            ("table", "rows and columns of data"),
            ("index", "a structure that speeds up lookups"),
            ("schema", "a namespace of database objects"),
            ("role", "a database login with privileges"),
            ("view", "a saved select query"),
            ("extension", "an installed add-on module"),
            ("sequence", "an auto-incrementing number generator"),
            ("trigger", "code run on row changes"),
            ("backup", "a dump of the database"),
            ("slow_query", "a statement that took long to run"),
        ],
    },
    Service {
        id: "stripe",
        title: "Stripe",
        objects: [
            ("customer", "a paying client record"),
            ("invoice", "a bill for goods or services"),
            ("subscription", "a recurring billing plan for a client"),
            ("refund", "money returned for a charge"),
            ("payment_intent", "an attempt to collect a payment"),
            ("coupon", "a discount on purchases"),
            ("product", "something you sell"),
            ("price", "what a product costs and how often"),
            ("payout", "a transfer of funds to your bank"),
            ("dispute", "a chargeback contested by a cardholder"),
        ],
    },
    Service {
        id: "salesforce",
        title: "Salesforce",
        objects: [
            ("lead", "a prospective client not yet qualified"),
            ("opportunity", "a pending sales deal"),
            ("account", "a company you do business with"),
            ("case", "a client support request"),
            ("campaign", "a marketing initiative"),
            ("quote", "a proposed price for a deal"),
            ("task", "a to-do for a sales rep"),
            ("contract", "a signed agreement"),
            ("forecast", "expected revenue for a period"),
            ("territory", "a region assigned to reps"),
        ],
    },
    Service {
        id: "zendesk",
        title: "Zendesk",
        objects: [
            ("support_ticket", "a help request from a requester"),
            ("macro", "a canned set of ticket actions"),
            ("article", "a help center knowledge base page"),
            ("organization", "a group of requesters"),
            ("satisfaction_rating", "a requester's score of support"),
            ("trigger_rule", "an automation on ticket events"),
            ("sla_policy", "a service level target"),
            ("agent", "a support staff member"),
            ("view", "a saved list of tickets"),
            ("tag", "a keyword on tickets"),
        ],
    },
    Service {
        id: "notion",
        title: "Notion",
        objects: [
            ("page", "a document in a workspace"),
            ("database", "a structured collection of pages"),
            ("block", "a paragraph, heading or list item"),
            ("comment", "a discussion note"),
            ("property", "a typed field of a collection"),
            ("template", "a reusable page layout"),
            ("workspace_member", "a person in the workspace"),
            ("synced_block", "content mirrored across pages"),
            ("relation", "a link between collections"),
            ("page_icon", "the emoji or image of a document"),
        ],
    },
    Service {
        id: "figma",
        title: "Figma",
        objects: [
            ("design_file", "a canvas of frames"),
            ("frame", "a container of layers"),
            ("component_set", "reusable UI variants"),
            ("style", "a shared color or text style"),
            ("design_comment", "feedback pinned on a canvas"),
            ("prototype", "a clickable flow between frames"),
            ("team_library", "published shared assets"),
            ("version_history", "saved checkpoints of a canvas"),
            ("image_export", "a rendered PNG or SVG of a frame"),
            ("dev_resource", "a link from a layer to code"),
        ],
    },
    Service {
        id: "s3",
        title: "Amazon S3",
        objects: [
            ("bucket", "a top-level object storage container"),
            ("object", "a stored blob under a key"),
            ("lifecycle_rule", "when stored blobs expire or change class"),
            ("bucket_policy", "a JSON access policy"),
            ("presigned_url", "a temporary link to a blob"),
            ("multipart_upload", "an upload sent in parts"),
            ("object_tag", "a key-value label on a blob"),
            ("replication_rule", "copying blobs to another region"),
            ("cors_rule", "which web origins may access blobs"),
            ("inventory_report", "a scheduled listing of blobs"),
        ],
    },
    Service {
        id: "kubernetes",
        title: "Kubernetes",
        objects: [
            ("pod", "a group of running containers"),
            ("deployment", "a replicated, rolling-updated workload"),
            ("service", "a stable network endpoint for pods"),
            ("config_map", "non-secret configuration data"),
            ("secret", "sensitive configuration such as passwords"),
            ("namespace", "an isolated cluster partition"),
            ("ingress", "HTTP routing into the cluster"),
            ("cron_job", "a workload run on a schedule"),
            ("node", "a machine in the cluster"),
            ("persistent_volume", "durable disk storage for pods"),
        ],
    },
    Service {
        id: "datadog",
        title: "Datadog",
        objects: [
            ("monitor", "an alert on a metric threshold"),
            ("metric", "a time series of measurements"),
            ("log_pipeline", "processing rules for ingested logs"),
            ("synthetic_test", "a scripted uptime check"),
            ("downtime", "a silenced alerting window"),
            ("slo", "a reliability objective"),
            ("notebook", "an investigation document with graphs"),
            ("host_tag", "a label on a monitored machine"),
            ("trace", "a distributed request span tree"),
            ("api_key", "a credential for submitting data"),
        ],
    },
    Service {
        id: "pagerduty",
        title: "PagerDuty",
        objects: [
            ("incident", "an outage that pages responders"),
            ("on_call_schedule", "who is paged and when"),
            ("escalation_policy", "who is paged next if nobody acknowledges"),
            ("responder", "a person handling an outage"),
            ("postmortem", "a write-up after an outage"),
            ("maintenance_window", "a period with paging paused"),
            ("alert_rule", "how incoming events become pages"),
            ("business_service", "a customer-facing capability"),
            ("status_update", "a progress note sent to stakeholders"),
            ("override", "a temporary swap of who is paged"),
        ],
    },
    Service {
        id: "shopify",
        title: "Shopify",
        objects: [
            ("order", "a shopper's purchase"),
            ("product_listing", "an item for sale in the storefront"),
            ("inventory_level", "stock on hand at a location"),
            ("discount_code", "a promo code for checkout"),
            ("fulfillment", "the shipment of a purchase"),
            ("collection", "a group of storefront items"),
            ("abandoned_checkout", "a cart left before paying"),
            ("gift_card", "stored value for shoppers"),
            ("shipping_zone", "where and how much delivery costs"),
            ("storefront_theme", "the look of the online store"),
        ],
    },
    Service {
        id: "twilio",
        title: "Twilio",
        objects: [
            ("sms", "a text message to a phone"),
            ("call", "a phone call"),
            ("phone_number", "a rented telephone number"),
            ("recording", "audio captured from a phone call"),
            ("voicemail", "a left voice message"),
            ("verification", "a one-time passcode check"),
            ("conversation", "a multi-channel chat"),
            ("fax", "a transmitted document over a phone line"),
            ("sip_trunk", "a VoIP connection"),
            ("usage_record", "billing usage of telephony"),
        ],
    },
    Service {
        id: "spotify",
        title: "Spotify",
        objects: [
            ("playlist", "an ordered list of songs"),
            ("track", "a single song"),
            ("album", "a collection of songs by an artist"),
            ("podcast_episode", "an audio show installment"),
            ("queue", "songs to play next"),
            ("playback", "what is playing now and on which device"),
            ("followed_artist", "a musician you follow"),
            ("saved_show", "a podcast in your library"),
            ("listening_history", "songs played recently"),
            ("audio_feature", "tempo, energy and danceability of a song"),
        ],
    },
    Service {
        id: "weather",
        title: "the weather service",
        objects: [
            ("forecast", "predicted conditions for the coming days"),
            ("current_conditions", "temperature and wind right now"),
            ("air_quality", "pollution and pollen levels"),
            ("severe_alert", "a storm or flood warning"),
            ("radar_image", "a precipitation map"),
            ("uv_index", "sun exposure risk"),
            ("historical_record", "past observed conditions"),
            ("marine_forecast", "waves and tides offshore"),
            ("sunrise_time", "when the sun rises and sets"),
            ("station", "a measuring site"),
        ],
    },
];

/// The five operations: name verb, and a description template (`{o}` the object, `{g}` its
/// gloss, `{s}` the service).
const OPERATIONS: [(&str, &str); 5] = [
    ("create", "Create a new {o} ({g}) in {s}. Returns its id."),
    ("list", "List the {o} items ({g}) in {s}, newest first, with paging."),
    ("get", "Fetch one {o} ({g}) from {s} by id, with every field."),
    ("update", "Change fields of an existing {o} ({g}) in {s}."),
    ("delete", "Permanently remove a {o} ({g}) from {s}; this cannot be undone."),
];

fn words(object: &str) -> String {
    object.replace('_', " ")
}

/// The tool name of an operation on an object, in the service's naming style.
fn tool_name(service: usize, verb: &str, object: &str) -> String {
    let id = SERVICES[service].id;
    match service % 3 {
        0 => format!("{id}__{verb}_{object}"),
        1 => {
            let camel: String = object.split('_').map(|w| w[..1].to_uppercase() + &w[1..]).collect();
            format!("{id}__{verb}{camel}")
        }
        _ => format!("{id}__{verb}-{}", object.replace('_', "-")),
    }
}

fn catalog_tools() -> Vec<ToolSpec> {
    let mut specs = Vec::with_capacity(1000);
    for (s, service) in SERVICES.iter().enumerate() {
        for (object, gloss) in service.objects {
            for (verb, template) in OPERATIONS {
                let description = template
                    .replace("{o}", &words(object))
                    .replace("{g}", gloss)
                    .replace("{s}", service.title);
                let id = format!("{object}_id");
                let schema = match verb {
                    "create" => json!({"type": "object", "properties": {
                        "name": {"type": "string", "description": format!("Name of the new {}.", words(object))},
                        "fields": {"type": "object", "description": "Other fields to set."}}, "required": ["name"]}),
                    "list" => json!({"type": "object", "properties": {
                        "limit": {"type": "integer", "description": "How many to return."},
                        "cursor": {"type": "string", "description": "Where the previous page ended."}}}),
                    "update" => json!({"type": "object", "properties": {
                        id.clone(): {"type": "string"}, "fields": {"type": "object", "description": "Fields to change."}},
                        "required": [id]}),
                    _ => {
                        json!({"type": "object", "properties": {id.clone(): {"type": "string"}}, "required": [id]})
                    }
                };
                let spec = ToolSpec::new(tool_name(s, verb, object), description, schema)
                    .with_tags(["mcp".to_owned(), format!("mcp:{}", service.id)])
                    .with_defer(true);
                specs.push(spec);
            }
        }
    }
    specs
}

/// Requests written from the tools' descriptions, and the tool each one means: (service,
/// operation, object).
const REQUESTS: [(&str, (&str, &str, &str)); 36] = [
    ("permanently remove a paying client record from Stripe", ("stripe", "delete", "customer")),
    ("show the newest proposed code changes awaiting review on GitHub", ("github", "list", "pull_request")),
    ("bill a client: a new invoice in Stripe", ("stripe", "create", "invoice")),
    ("return money for a charge: make a new refund", ("stripe", "create", "refund")),
    ("make a new conversation space for the team in Slack", ("slack", "create", "channel")),
    ("post a new message in a Slack conversation", ("slack", "create", "message")),
    ("fetch the predicted weather for the coming days", ("weather", "get", "forecast")),
    ("fetch the temperature and wind right now", ("weather", "get", "current_conditions")),
    ("list every storm or flood warning", ("weather", "list", "severe_alert")),
    ("schedule a new meeting or appointment in Google Calendar", ("calendar", "create", "event")),
    ("invite a new guest to a meeting", ("calendar", "create", "attendee")),
    ("list who is paged and when in PagerDuty", ("pagerduty", "list", "on_call_schedule")),
    ("open a new incident for an outage", ("pagerduty", "create", "incident")),
    ("write up a new postmortem after the outage", ("pagerduty", "create", "postmortem")),
    ("kill the running containers: delete a Kubernetes pod", ("kubernetes", "delete", "pod")),
    ("change the non-secret configuration data", ("kubernetes", "update", "config_map")),
    ("silence alerting with a new window, a Datadog downtime", ("datadog", "create", "downtime")),
    ("set up a new alert on a metric threshold", ("datadog", "create", "monitor")),
    ("fetch a shopper's purchase from Shopify by id", ("shopify", "get", "order")),
    ("list the carts left before paying", ("shopify", "list", "abandoned_checkout")),
    ("create a promo code for checkout", ("shopify", "create", "discount_code")),
    ("send a new text message to a phone", ("twilio", "create", "sms")),
    ("fetch a one-time passcode check by id", ("twilio", "get", "verification")),
    ("change which songs are on a Spotify playlist", ("spotify", "update", "playlist")),
    ("list the songs played recently", ("spotify", "list", "listening_history")),
    ("upload a new stored document to Google Drive", ("drive", "create", "file")),
    ("share a document: a new grant of access", ("drive", "create", "permission")),
    ("list the earlier saved versions of a document", ("drive", "list", "revision")),
    ("speed up lookups with a new database index", ("postgres", "create", "index")),
    ("list the statements that took long to run in PostgreSQL", ("postgres", "list", "slow_query")),
    ("create a temporary link to a blob in S3", ("s3", "create", "presigned_url")),
    ("remove an object storage container from Amazon S3 for good", ("s3", "delete", "bucket")),
    ("qualify a prospective client: change fields of a Salesforce lead", ("salesforce", "update", "lead")),
    ("list pending sales deals in Salesforce", ("salesforce", "list", "opportunity")),
    ("publish a new help center knowledge base page", ("zendesk", "create", "article")),
    ("fetch the emoji or image of a Notion document", ("notion", "get", "page_icon")),
];

/// The name of the tool a request means.
fn expected((service, verb, object): (&str, &str, &str)) -> String {
    let index = SERVICES.iter().position(|s| s.id == service).unwrap();
    tool_name(index, verb, object)
}

fn registry() -> Registry {
    let tools = catalog_tools().into_iter().map(|spec| {
        let name = spec.name.clone();
        std::sync::Arc::new(FnTool::new(spec, move |_, args| {
            let name = name.clone();
            async move { Ok(ToolOutput::text(format!("{name} ran with {args}"))) }
        })) as std::sync::Arc<dyn tool_runtime::Tool>
    });
    Registry::builder().tools(tools).build().unwrap()
}

#[test]
fn the_generated_catalog_is_a_thousand_distinct_tools() {
    let registry = registry();
    assert_eq!(registry.len(), 1000);
    for (_, meant) in REQUESTS {
        let name = expected(meant);
        assert!(registry.contains(&name), "{name} is not a generated tool");
    }
}

#[test]
fn every_request_finds_its_tool_within_the_top_three() {
    let catalog = Catalog::new(registry());
    let mut misses = Vec::new();
    let mut ranks = [0usize; 3];
    for (request, meant) in REQUESTS {
        let expected = expected(meant);
        // The request does not simply name the tool.
        assert!(!request.contains(&expected), "{request}");
        let found: Vec<String> = catalog
            .search(&tool_runtime::catalog::SearchRequest { query: request.to_owned(), limit: 3 })
            .iter()
            .map(|spec| spec.name.clone())
            .collect();
        match found.iter().position(|name| *name == expected) {
            Some(rank) => ranks[rank] += 1,
            None => misses.push(format!("{request:?}: expected {expected}, found {found:?}")),
        }
    }
    assert!(misses.is_empty(), "{} of {} missed:\n{}", misses.len(), REQUESTS.len(), misses.join("\n"));
    // First place for most: the search ranks, it does not only shortlist.
    assert!(ranks[0] * 10 >= REQUESTS.len() * 8, "ranks (1st, 2nd, 3rd): {ranks:?}");
}

fn chat_names(definitions: &[Value]) -> Vec<String> {
    definitions.iter().map(|d| d["function"]["name"].as_str().unwrap().to_owned()).collect()
}

/// The model's side of a Chat Completions conversation, played by the test: it searches with
/// the request, then calls the first tool the answer names.
#[tokio::test]
async fn a_chat_conversation_searches_then_calls_what_it_found() {
    let catalog = Catalog::new(registry());
    let dispatcher = Dispatcher::new(catalog.registry().clone());
    let options = DefinitionOptions::default();
    let mut loaded = LoadedTools::new();
    let first = catalog.definitions(Provider::OpenAiChat, &loaded, &options).unwrap();
    assert_eq!(chat_names(&first), ["tool_search"]);

    let mut previous = first;
    for (turn, (request, meant)) in REQUESTS.iter().take(6).enumerate() {
        let expected = &expected(*meant);
        let search = json!({"role": "assistant", "tool_calls": [{"id": format!("search-{turn}"), "type": "function",
            "function": {"name": "tool_search", "arguments": json!({"query": request, "limit": 3}).to_string()}}]});
        let calls = catalog.parse_turn(Provider::OpenAiChat, &search).unwrap();
        let results =
            catalog.run_turn(&dispatcher, calls, &mut loaded, CancellationToken::new()).await.unwrap();
        let rendered = catalog.render_turn(Provider::OpenAiChat, &results, &options).unwrap();
        let text = rendered[0]["content"].as_str().unwrap();
        assert!(text.contains(&format!("- {expected}: ")), "{text}");
        let TurnResult::Search(outcome) = &results[0] else { panic!("a search answers a search") };
        assert!(outcome.found.as_ref().unwrap().iter().any(|name| name == expected));

        // The next request keeps the previous definitions and adds the found ones at the end.
        let next = catalog.definitions(Provider::OpenAiChat, &loaded, &options).unwrap();
        assert_eq!(next[..previous.len()], previous[..]);
        assert!(chat_names(&next).contains(expected));

        let call = json!({"role": "assistant", "tool_calls": [{"id": format!("call-{turn}"), "type": "function",
            "function": {"name": expected, "arguments": "{}"}}]});
        let calls = catalog.parse_turn(Provider::OpenAiChat, &call).unwrap();
        let results =
            catalog.run_turn(&dispatcher, calls, &mut loaded, CancellationToken::new()).await.unwrap();
        let TurnResult::Tool(result) = &results[0] else { panic!("a tool call is the dispatcher's") };
        assert_eq!(result.tool, *expected);
        previous = next;
    }
    // Six searches of three tools each loaded at most 18 of the 1,000 definitions.
    assert!(loaded.len() <= 18, "{}", loaded.len());
    assert_eq!(catalog.definitions(Provider::OpenAiChat, &loaded, &options).unwrap().len(), 1 + loaded.len());
}
