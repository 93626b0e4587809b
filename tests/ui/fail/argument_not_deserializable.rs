use tool_runtime::tool;

struct Connection;

#[tool]
async fn query(sql: String, conn: Connection) -> String {
    let _ = conn;
    sql
}

fn main() {}
