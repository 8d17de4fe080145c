// A MariaDB client with a known script, for the MySQL processor's real-server test and
// its recorded session: libmariadb's binary protocol (COM_STMT_PREPARE, _EXECUTE with
// bound parameters, _SEND_LONG_DATA, _RESET, _CLOSE), COM_INIT_DB, COM_QUERY and
// COM_PING over TCP. Prints what it sent, one "name count" line per command, so the test
// can count the trace's messages against it.
//
//   mysql_probe HOST PORT USER DATABASE ROWS
#include <mysql.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

int Die(MYSQL* db, const char* what) {
  std::fprintf(stderr, "%s: %s\n", what, mysql_error(db));
  return 1;
}
int DieStmt(MYSQL_STMT* stmt, const char* what) {
  std::fprintf(stderr, "%s: %s\n", what, mysql_stmt_error(stmt));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: mysql_probe HOST PORT USER DATABASE ROWS\n");
    return 2;
  }
  const char* host = argv[1];
  unsigned port = unsigned(std::atoi(argv[2]));
  const char* user = argv[3];
  const char* database = argv[4];
  int rows = std::atoi(argv[5]);
  int queries = 0, prepares = 0, executes = 0, long_data = 0, closes = 0, resets = 0, pings = 0;

  MYSQL* db = mysql_init(nullptr);
  unsigned protocol = MYSQL_PROTOCOL_TCP;
  mysql_optionsv(db, MYSQL_OPT_PROTOCOL, &protocol);
  if (mysql_real_connect(db, host, user, "", nullptr, port, nullptr, 0) == nullptr)
    return Die(db, "connect");
  std::string create = std::string("CREATE DATABASE IF NOT EXISTS ") + database;
  if (mysql_query(db, create.c_str()) != 0) return Die(db, "create database");
  ++queries;
  if (mysql_select_db(db, database) != 0) return Die(db, "select db");  // COM_INIT_DB
  if (mysql_query(db, "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(64))") != 0)
    return Die(db, "create table");
  ++queries;

  // INSERT with two bound parameters; every third row's name goes as long data.
  MYSQL_STMT* insert = mysql_stmt_init(db);
  const char* insert_sql = "INSERT INTO t (id, name) VALUES (?, ?)";
  if (mysql_stmt_prepare(insert, insert_sql, strlen(insert_sql)) != 0)
    return DieStmt(insert, "prepare insert");
  ++prepares;
  for (int i = 1; i <= rows; ++i) {
    int id = i;
    char name[32];
    unsigned long name_length = unsigned(std::snprintf(name, sizeof name, "name-%d", i));
    MYSQL_BIND bind[2];
    std::memset(bind, 0, sizeof bind);
    bind[0].buffer_type = MYSQL_TYPE_LONG;
    bind[0].buffer = &id;
    bind[1].buffer_type = MYSQL_TYPE_STRING;
    bind[1].buffer = name;
    bind[1].buffer_length = name_length;
    bind[1].length = &name_length;
    if (mysql_stmt_bind_param(insert, bind) != 0) return DieStmt(insert, "bind insert");
    if (i % 3 == 0) {
      if (mysql_stmt_send_long_data(insert, 1, name, name_length) != 0)
        return DieStmt(insert, "long data");
      ++long_data;
    }
    if (mysql_stmt_execute(insert) != 0) return DieStmt(insert, "execute insert");
    ++executes;
  }
  mysql_stmt_close(insert);
  ++closes;

  // SELECT with one parameter, its rows fetched; then reset and run again.
  MYSQL_STMT* select = mysql_stmt_init(db);
  const char* select_sql = "SELECT id, name FROM t WHERE id <= ? ORDER BY id";
  if (mysql_stmt_prepare(select, select_sql, strlen(select_sql)) != 0)
    return DieStmt(select, "prepare select");
  ++prepares;
  for (int limit : {1, rows}) {
    MYSQL_BIND param;
    std::memset(&param, 0, sizeof param);
    param.buffer_type = MYSQL_TYPE_LONG;
    param.buffer = &limit;
    if (mysql_stmt_bind_param(select, &param) != 0) return DieStmt(select, "bind select");
    if (mysql_stmt_execute(select) != 0) return DieStmt(select, "execute select");
    ++executes;
    if (mysql_stmt_store_result(select) != 0) return DieStmt(select, "store result");
    if (int(mysql_stmt_num_rows(select)) != limit) {
      std::fprintf(stderr, "select: %d rows, not %d\n", int(mysql_stmt_num_rows(select)), limit);
      return 1;
    }
    mysql_stmt_free_result(select);
    if (mysql_stmt_reset(select) != 0) return DieStmt(select, "reset");
    ++resets;
  }
  mysql_stmt_close(select);
  ++closes;

  if (mysql_ping(db) != 0) return Die(db, "ping");
  ++pings;
  if (mysql_query(db, "SELECT COUNT(*) FROM t") != 0) return Die(db, "count");
  ++queries;
  MYSQL_RES* result = mysql_store_result(db);
  if (result == nullptr) return Die(db, "store count");
  mysql_free_result(result);
  mysql_close(db);  // COM_QUIT

  std::printf(
      "Query %d\nInitDB 1\nPrepare %d\nExecute %d\nLongData %d\nCloseStmt %d\n"
      "ResetStmt %d\nPing %d\nQuit 1\n",
      queries, prepares, executes, long_data, closes, resets, pings);
  return 0;
}
