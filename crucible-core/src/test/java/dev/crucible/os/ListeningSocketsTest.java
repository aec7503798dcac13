package dev.crucible.os;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import org.junit.jupiter.api.Test;

/** The listening ports of a namespace, read from /proc: a real listener shows, a connected socket does not. */
class ListeningSocketsTest {
    @Test
    void aListenerOfThisProcessShowsAndAConnectionDoesNot() throws Exception {
        try (ServerSocket listener = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
             Socket client = new Socket(InetAddress.getLoopbackAddress(), listener.getLocalPort());
             Socket accepted = listener.accept()) {
            assertThat(ListeningSockets.of(ProcessHandle.current().pid())).contains(listener.getLocalPort())
                    .doesNotContain(client.getLocalPort());
        }
    }

    @Test
    void onlyListenRowsCountAndMalformedLinesAreSkipped() {
        String table = """
                  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
                   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1
                   1: 0100007F:1F41 0100007F:9C40 01 00000000:00000000 00:00000000 00000000  1000        0 2
                   2: 00000000000000000000000001000000:0BB8 00000000000000000000000000000000:0000 0A 0 0 0 0 0 0
                   3: garbage
                """;
        assertThat(ListeningSockets.parse(table)).containsExactly(3000, 8000);
        assertThat(ListeningSockets.of(-1)).isEmpty();
    }
}
