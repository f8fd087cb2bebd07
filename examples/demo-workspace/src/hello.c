#include <stdio.h>

int main(void) {
        printf("hello from the demo workspace\n");
        return 0;
}
