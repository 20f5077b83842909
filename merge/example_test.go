package merge_test

import (
	"fmt"

	"github.com/exporterset/exporterset/merge"
)

func ExampleParameters() {
	class := []byte(`{"serial":{"baud":115200,"port":"/dev/ttyUSB0"},"flags":["--verbose"],"timeout":30}`)
	set := []byte(`{"serial":{"baud":9600},"flags":["--quiet"],"timeout":null,"id":9007199254740993}`)

	out, err := merge.Parameters(class, set)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(out))

	_, err = merge.Parameters(class, []byte(`["not","an","object"]`))
	fmt.Println(err)
	// Output:
	// {"flags":["--quiet"],"id":9007199254740993,"serial":{"baud":9600,"port":"/dev/ttyUSB0"}}
	// exporterset parameters: top level must be a JSON object, got array
}
