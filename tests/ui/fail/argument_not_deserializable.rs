use tool_runtime::tool;

struct Connection;

#[tool(undocumented)]
async fn query(sql: String, conn: Connection) -> String {
    let _ = conn;
    sql
}

fn main() {}
