/* A dot plugin in C: reads the request on stdin, writes out/greeting.txt, prints the response.
 * Build it static (process containment runs static executables only):
 *     cc -static -O2 -o greet greet.c
 * The request parsing below is deliberately tiny (it only looks for "name":"..."); a real plugin
 * would use a JSON library. */
#include <stdio.h>
#include <string.h>

int main(void) {
    static char request[1 << 16];
    size_t n = fread(request, 1, sizeof request - 1, stdin);
    request[n] = '\0';

    char name[256] = "world";
    const char *at = strstr(request, "\"name\":\"");
    if (at) {
        at += strlen("\"name\":\"");
        size_t len = strcspn(at, "\"\\");
        if (len < sizeof name) {
            memcpy(name, at, len);
            name[len] = '\0';
        }
    }

    FILE *out = fopen("out/greeting.txt", "w");
    if (!out || fprintf(out, "hello, %s, from C\n", name) < 0 || fclose(out) != 0) {
        printf("{\"protocol\":\"1.0\",\"status\":\"error\",\"message\":\"cannot write out/greeting.txt\"}\n");
        return 1;
    }
    printf("{\"protocol\":\"1.0\",\"status\":\"ok\",\"outputs\":[\"greeting.txt\"]}\n");
    return 0;
}
