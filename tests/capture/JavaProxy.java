// A reverse proxy in Java for tests/capture/real_servers_handoff_test.cc, run from source
// (java JavaProxy.java PORT BACKEND_PORT): the JDK's HttpServer, whose dispatcher thread
// hands each exchange to a pool of 4 threads, and HttpURLConnection, whose kept connections
// to the backend any of those threads may reuse; the request's X-Weft-Ids header passed on,
// the backend's reply and its X-Weft-Ids sent back.
import com.sun.net.httpserver.HttpServer;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.InetSocketAddress;
import java.net.URL;
import java.util.concurrent.Executors;

public class JavaProxy {
  public static void main(String[] args) throws Exception {
    int port = Integer.parseInt(args[0]);
    String backend = "http://127.0.0.1:" + args[1];
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 64);
    server.setExecutor(Executors.newFixedThreadPool(4));
    server.createContext("/", exchange -> {
      byte[] body = exchange.getRequestBody().readAllBytes();
      HttpURLConnection c = (HttpURLConnection) new URL(backend + exchange.getRequestURI()).openConnection();
      c.setRequestMethod(exchange.getRequestMethod());
      c.setRequestProperty("X-Weft-Ids", exchange.getRequestHeaders().getFirst("X-Weft-Ids"));
      if (body.length > 0) {
        c.setDoOutput(true);
        try (OutputStream out = c.getOutputStream()) { out.write(body); }
      }
      byte[] reply;
      try (InputStream in = c.getInputStream()) { reply = in.readAllBytes(); }
      exchange.getResponseHeaders().set("X-Weft-Ids", c.getHeaderField("X-Weft-Ids"));
      exchange.sendResponseHeaders(c.getResponseCode(), reply.length);
      try (OutputStream out = exchange.getResponseBody()) { out.write(reply); }
    });
    server.start();
  }
}
