// Package echarts hands chart options built in Go to the ECharts library the
// frame page loads (window.echarts), through syscall/js. Outside a browser
// every call is a no-op, so components that draw charts still render and
// test natively.
package echarts
