// A test that reads a file beside the checkout: must be caught.
static const char *trace = "../shared/traces/azure_llm_conv_2023.csv";
